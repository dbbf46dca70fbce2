"""Who is asking: identity on every event and socket connect, and live sign-out."""
