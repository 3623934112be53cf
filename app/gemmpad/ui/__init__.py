"""The desktop app: a Dear PyGui window where you draw a digit and watch it read live.

Modules: `canvas` (strokes into pixels, no GUI), `inference` (the worker
thread), `style` (colours, fonts, theme), `window` (layout and frame loop),
`app` (the `gemmpad app` command).
"""
