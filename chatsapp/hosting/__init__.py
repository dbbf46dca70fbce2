"""Running the app process: the production server, log redaction, garbage-collector tuning."""
