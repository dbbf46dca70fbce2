// When a message was sent: a short clock time on screen, the exact date and time (to the
// second, in the reader's own time zone and locale) on hover. Formatted in the browser, which
// knows that zone; the server only sends milliseconds since the epoch.
export function SentTime({ at }) {
  const ms = Number(at);
  if (!Number.isFinite(ms) || ms <= 0) return null;
  const when = new Date(ms);
  const exact = when.toLocaleString(undefined, {
    weekday: "short",
    year: "numeric",
    month: "short",
    day: "numeric",
    hour: "2-digit",
    minute: "2-digit",
    second: "2-digit",
    timeZoneName: "short",
  });
  const short = when.toLocaleTimeString(undefined, { hour: "2-digit", minute: "2-digit" });
  return (
    <time
      dateTime={when.toISOString()}
      title={exact}
      className="sent-time"
      style={{ fontSize: "12px", color: "var(--gray-11)", cursor: "default" }}
    >
      {short}
    </time>
  );
}
