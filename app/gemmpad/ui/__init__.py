"""The desktop app: a Dear PyGui window where you draw a digit and watch it read live.

Modules: `canvas` (strokes into pixels, no GUI), `workers/` (the threads that draw nothing:
`inference` off the UI thread, `race` of every kernel, `learner` for Learn),
`state` (what the user chose and what the window shows, stored once; the panels read it),
`actions` (the callbacks panels and keys get instead of the window), `window` (the
actions and the frame loop, the state's one writer), its panels `draw_panel`,
`prediction_panel`, `engine_panel` (with `race_panel` and `lab_panel`, the roofline and anatomy of a rung),
`learn_panel`, `status_bar`, `help_overlay`, `layout` (where they go at a window size),
`keys` (the keyboard map), `text` (what the window says), `style` (colours, fonts, theme),
`cores` (threads for the CPU kernels beside the window), `harness` (scripted runs), `app`
(the `gemmpad app` command).
"""
