"""The Reflex app: UI state and components only; business rules live in ``backend``."""
