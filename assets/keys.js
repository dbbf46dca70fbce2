// Keyboard-first: Enter sends, Shift+Enter is a new line, Esc stops the reply,
// Ctrl/Cmd+Shift+O starts a new chat, Esc in a chat's title field leaves the title as it was
// (Enter there submits its form). Plain DOM wiring so typing costs no round trip.
// Guarded: the page may load this script more than once (client-side navigation).
if (!window.__chatsKeysInstalled) {
  window.__chatsKeysInstalled = true;
  document.addEventListener("keydown", (event) => {
    const click = (id) => document.getElementById(id)?.click();
    if ((event.ctrlKey || event.metaKey) && event.shiftKey && event.key.toLowerCase() === "o") {
      event.preventDefault();
      click("new-chat");
      return;
    }
    if (event.key === "Escape" && event.target?.closest?.(".rename-input")) {
      event.preventDefault();
      event.target.closest("form")?.querySelector(".cancel-rename")?.click();
      return;
    }
    if (event.target?.id !== "composer") return;
    if (event.key === "Enter" && !event.shiftKey && !event.isComposing) {
      event.preventDefault();
      click("send");
    } else if (event.key === "Escape") {
      event.preventDefault();
      click("stop");
    }
  });
}
