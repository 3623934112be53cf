"""The window's threads that draw nothing: inference off the UI thread, the race of every kernel,
the Learn button's fine-tune. No Dear PyGui here: each is tested without a window."""
