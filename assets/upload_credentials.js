// Uploads carry the session cookie when the backend is another origin (the development
// server serves pages on one port and the backend on another). Reflex's upload sends an
// XMLHttpRequest without credentials, and the backend checks every upload from its own
// request (chatsapp/upload_guard.py): without the cookie it would refuse them all. Same-origin
// uploads (production: one port) carry the cookie anyway.
(() => {
  if (window.__chatsUploadCredentials) return;
  window.__chatsUploadCredentials = true;
  const open = XMLHttpRequest.prototype.open;
  XMLHttpRequest.prototype.open = function (method, url, ...rest) {
    open.call(this, method, url, ...rest);
    try {
      const target = new URL(url, window.location.href);
      if (target.pathname.endsWith("/_upload") && target.origin !== window.location.origin) {
        this.withCredentials = true;
      }
    } catch {
      // not a URL: nothing to add
    }
  };
})();
