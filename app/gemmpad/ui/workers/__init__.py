"""The window's threads that draw nothing: inference off the UI thread, the race of every kernel."""
