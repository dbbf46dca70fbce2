"""Test helpers shared by every suite (and the benches): fake servers, fixtures, fake models."""
