// The phone layout's sidebar drawer (assets/layout.css shows it under 768 px).
// Open/closed is this tab's own UI state, kept on <html data-drawer="open">: opening costs no
// round trip and no other tab sees it. Buttons marked data-drawer-toggle open it; Escape, a tap
// on the backdrop, a left swipe, picking a chat or creating one close it. Whatever opens a
// chat without being a link in the drawer (a menu item, which lives outside it in a portal)
// is marked data-drawer-close.
// Guarded: the page may load this script more than once (client-side navigation).
if (!window.__chatsDrawerInstalled) {
  window.__chatsDrawerInstalled = true;
  const SWIPE_MIN_PX = 60; // a deliberate horizontal move, not a tap or a vertical scroll
  const root = document.documentElement;
  let returnFocus = null;

  const isOpen = () => root.dataset.drawer === "open";
  const setOpen = (open) => {
    if (open === isOpen()) return;
    const sidebar = document.getElementById("sidebar");
    // Modal while open: what lies under the backdrop takes no focus, clicks or screen reader.
    for (const id of ["main-pane", "memory-panel"]) {
      document.getElementById(id)?.toggleAttribute("inert", open);
    }
    if (open) {
      root.dataset.drawer = "open";
      returnFocus = document.activeElement;
      sidebar?.focus({ preventScroll: true });
    } else {
      delete root.dataset.drawer;
      if (sidebar?.contains(document.activeElement)) returnFocus?.focus?.({ preventScroll: true });
      returnFocus = null;
    }
    for (const button of document.querySelectorAll("[data-drawer-toggle]")) {
      button.setAttribute("aria-expanded", String(open));
    }
  };

  document.addEventListener("click", (event) => {
    const target = event.target instanceof Element ? event.target : null;
    if (!target) return;
    if (target.closest("[data-drawer-toggle]")) {
      setOpen(!isOpen());
    } else if (isOpen() && target.closest("#drawer-backdrop, #sidebar a[href], #new-chat, [data-drawer-close]")) {
      setOpen(false);
    }
  });

  document.addEventListener("keydown", (event) => {
    // A menu or dialog inside the drawer handles its own Escape first (and marks it handled).
    if (event.key === "Escape" && isOpen() && !event.defaultPrevented) setOpen(false);
  });

  let swipe = null;
  document.addEventListener(
    "touchstart",
    (event) => {
      const touch = event.touches[0];
      const inDrawer = event.target instanceof Element && event.target.closest("#sidebar");
      swipe = isOpen() && inDrawer && event.touches.length === 1
        ? { x: touch.clientX, y: touch.clientY }
        : null;
    },
    { passive: true },
  );
  document.addEventListener(
    "touchend",
    (event) => {
      const touch = event.changedTouches[0];
      if (!swipe || !touch) return;
      const dx = touch.clientX - swipe.x;
      const dy = touch.clientY - swipe.y;
      swipe = null;
      if (dx <= -SWIPE_MIN_PX && Math.abs(dx) > Math.abs(dy)) setOpen(false);
    },
    { passive: true },
  );

  // Widened past the phone layout (a rotation, a resized window): the drawer is gone, so is
  // its open state. The backdrop shows only while the phone drawer is open.
  document.addEventListener("touchcancel", () => { swipe = null; }, { passive: true });

  window.addEventListener("resize", () => {
    const backdrop = document.getElementById("drawer-backdrop");
    if (isOpen() && backdrop && getComputedStyle(backdrop).display === "none") setOpen(false);
  });
}
