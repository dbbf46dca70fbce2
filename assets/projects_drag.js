// Drag a chat onto a project (desktop): a chat row (its link is draggable) carries its id; a
// project's group takes it and submits the hidden #drop-chat-form, whose handler moves the
// chat. A chat dragged out of a project onto the list of loose chats (#loose-chats) leaves its
// project (the form's project id is then empty). The keyboard and phones use the row's
// "Move to project…" menu item instead.
// Guarded: the page may load this script more than once (client-side navigation).
if (!window.__chatsProjectsDragInstalled) {
  window.__chatsProjectsDragInstalled = true;
  const KIND = "application/x-chats-chat-id";
  const FROM_PROJECT = "application/x-chats-from-project"; // only such a chat may leave one
  const targetOf = (event) => {
    const group = event.target?.closest?.(".project-group[data-project-id]");
    if (group) return group;
    const loose = event.target?.closest?.("#loose-chats");
    return loose && event.dataTransfer?.types?.includes(FROM_PROJECT) ? loose : null;
  };
  const carriesChat = (event) => event.dataTransfer?.types?.includes(KIND);
  const unmark = () => {
    for (const el of document.querySelectorAll("[data-drop-target]")) {
      delete el.dataset.dropTarget;
    }
  };
  document.addEventListener("dragstart", (event) => {
    const row = event.target?.closest?.(".chat-item[data-chat-id]");
    if (!row || !event.dataTransfer) return;
    event.dataTransfer.setData(KIND, row.dataset.chatId);
    if (row.closest(".project-group")) event.dataTransfer.setData(FROM_PROJECT, "1");
    event.dataTransfer.effectAllowed = "move";
  });
  document.addEventListener("dragover", (event) => {
    const target = targetOf(event);
    if (!target || !carriesChat(event)) return;
    event.preventDefault(); // this element takes the drop
    event.dataTransfer.dropEffect = "move";
    if (!target.dataset.dropTarget) {
      unmark();
      target.dataset.dropTarget = "true";
    }
  });
  document.addEventListener("dragleave", (event) => {
    const target = targetOf(event);
    if (target && !target.contains(event.relatedTarget)) delete target.dataset.dropTarget;
  });
  document.addEventListener("dragend", unmark);
  document.addEventListener("drop", (event) => {
    const target = targetOf(event);
    unmark();
    if (!target || !carriesChat(event)) return;
    event.preventDefault();
    const form = document.getElementById("drop-chat-form");
    if (!form) return;
    form.querySelector("#drop-chat-id").value = event.dataTransfer.getData(KIND);
    form.querySelector("#drop-project-id").value = target.dataset.projectId ?? "";
    form.requestSubmit();
  });
}
