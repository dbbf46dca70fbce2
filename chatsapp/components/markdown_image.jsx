// An image in rendered markdown (a model's reply, a memory note). Model output must not make
// the browser fetch a remote URL on its own (a tracking pixel, a request to a local service),
// so only addresses of this page's own origin, data: and blob: render inline; anything else
// becomes a link naming its host, fetched only if the user clicks (in a new tab).
// react-markdown has already emptied addresses of unsafe protocols (javascript:, data:).

function ownOrigin(address) {
  try {
    const url = new URL(address, window.location.href);
    if (url.protocol === "data:" || url.protocol === "blob:") return true;
    return url.origin === window.location.origin;
  } catch {
    return false;
  }
}

function remoteHost(address) {
  try {
    const url = new URL(address, window.location.href);
    return url.protocol === "http:" || url.protocol === "https:" ? url.host : "";
  } catch {
    return "";
  }
}

export function MarkdownImage({ src, alt, title }) {
  const address = typeof src === "string" ? src : "";
  const label = alt ? `“${alt}”` : "";
  if (address && ownOrigin(address)) {
    return <img src={address} alt={alt || ""} title={title} style={{ maxWidth: "100%" }} />;
  }
  const host = remoteHost(address);
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
