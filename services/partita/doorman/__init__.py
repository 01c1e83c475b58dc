"""Doorman: global distributed client-side rate limiting (seed 002), server and client."""
