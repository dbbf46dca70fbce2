// An image in rendered markdown (a model's reply, a memory note, an imported message). Content
// must not make the browser fetch anything on its own: not a remote URL (a tracking pixel, a
// request to a local service), and not this app's own addresses either, which the browser
// would request with the viewer's cookie (![x](/export/all.zip) rebuilt the export on every
// view). So only data: and blob: addresses (the app's own attachments) render inline; a
// remote http(s) address becomes a link naming its host, fetched only if the user clicks (in
// a new tab); anything else is not shown. react-markdown has already emptied addresses of
// unsafe protocols (javascript:): an empty address is not shown either, never read as this
// page's own.

function isInline(address) {
  return /^(data|blob):/i.test(address.trim());
}

function remoteHost(address) {
  try {
    const url = new URL(address);
    if (url.origin === window.location.origin) return "";
    return url.protocol === "http:" || url.protocol === "https:" ? url.host : "";
  } catch {
    return ""; // a relative address is this app's own
  }
}

export function MarkdownImage({ src, alt, title }) {
  const address = typeof src === "string" ? src : "";
  const label = alt ? `“${alt}”` : "";
  if (address && isInline(address)) {
    return <img src={address} alt={alt || ""} title={title} style={{ maxWidth: "100%" }} />;
  }
  const host = address ? remoteHost(address) : "";
  if (!host) {
    return <span className="image-not-shown">[image not shown{label ? ` ${label}` : ""}]</span>;
  }
  return (
    <a
      href={address}
      target="_blank"
      rel="noopener noreferrer nofollow"
      referrerPolicy="no-referrer"
      className="remote-image"
      data-host={host}
      title={address}
    >
      [image{label ? ` ${label}` : ""} from {host}: click to open]
    </a>
  );
}
