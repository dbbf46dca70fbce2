"""Live updates: backend changes pushed into shared states and fanned out to every tab."""
