"""Plain HTTP routes mounted in front of Reflex: account forms, exports, the home redirect, CSP."""
