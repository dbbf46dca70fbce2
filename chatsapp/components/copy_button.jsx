// A copy button that says "Copied" for a moment once the clipboard accepted the text.
// The confirmation is browser-side state: a round trip to the server for it would lag and
// would make every click an event the server has to authorise.
import { useEffect, useState } from "react";

export function CopyButton({ text, label, className }) {
  const [state, setState] = useState("idle"); // "idle" | "copied" | "failed"
  useEffect(() => {
    if (state === "idle") return undefined;
    const timer = setTimeout(() => setState("idle"), 1500);
    return () => clearTimeout(timer);
  }, [state]);
  const copy = () => {
    const value = typeof text === "string" ? text : String(text ?? "");
    if (!navigator.clipboard) {
      setState("failed");
      return;
    }
    navigator.clipboard.writeText(value).then(
      () => setState("copied"),
      () => setState("failed"),
    );
  };
  const shown = state === "copied" ? "Copied" : state === "failed" ? "Copy failed" : "Copy";
  return (
    <button
      type="button"
      onClick={copy}
      aria-label={label || "Copy"}
      title={label || "Copy"}
      data-state={state}
      aria-live="polite"
      className={`copy-button ${className || ""}`}
      style={{
        font: "inherit",
        fontSize: "12px",
        lineHeight: 1.4,
        padding: "1px 6px",
        border: "1px solid var(--gray-a6)",
        borderRadius: "var(--radius-2)",
        background: "var(--color-panel-solid)",
        color: "var(--gray-11)",
        cursor: "pointer",
      }}
    >
      {shown}
    </button>
  );
}
