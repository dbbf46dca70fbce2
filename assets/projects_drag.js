// Drag a chat onto a project (desktop): a chat row (its link is draggable) carries its id; a
// project's group takes it and submits the hidden #drop-chat-form, whose handler moves the
// chat. The keyboard and phones use the row's "Move to project…" menu item instead.
// Guarded: the page may load this script more than once (client-side navigation).
if (!window.__chatsProjectsDragInstalled) {
  window.__chatsProjectsDragInstalled = true;
  const KIND = "application/x-chats-chat-id";
  const groupOf = (event) => event.target?.closest?.(".project-group[data-project-id]");
  const carriesChat = (event) => event.dataTransfer?.types?.includes(KIND);
  const unmark = () => {
    for (const el of document.querySelectorAll(".project-group[data-drop-target]")) {
      delete el.dataset.dropTarget;
    }
  };
  document.addEventListener("dragstart", (event) => {
    const row = event.target?.closest?.(".chat-item[data-chat-id]");
    if (!row || !event.dataTransfer) return;
    event.dataTransfer.setData(KIND, row.dataset.chatId);
    event.dataTransfer.effectAllowed = "move";
  });
  document.addEventListener("dragover", (event) => {
    const group = groupOf(event);
    if (!group || !carriesChat(event)) return;
    event.preventDefault(); // this element takes the drop
    event.dataTransfer.dropEffect = "move";
    if (!group.dataset.dropTarget) {
      unmark();
      group.dataset.dropTarget = "true";
    }
  });
  document.addEventListener("dragleave", (event) => {
    const group = groupOf(event);
    if (group && !group.contains(event.relatedTarget)) delete group.dataset.dropTarget;
  });
  document.addEventListener("dragend", unmark);
  document.addEventListener("drop", (event) => {
    const group = groupOf(event);
    unmark();
    if (!group || !carriesChat(event)) return;
    event.preventDefault();
    const form = document.getElementById("drop-chat-form");
    if (!form) return;
    form.querySelector("#drop-chat-id").value = event.dataTransfer.getData(KIND);
    form.querySelector("#drop-project-id").value = group.dataset.projectId;
    form.requestSubmit();
  });
}
