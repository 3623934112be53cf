"""The `?` overlay: what each panel shows, what the two times mean, why a GPU can lose to
a CPU at batch 1, and every key (from the keyboard map, so it cannot drift)."""

from __future__ import annotations

import dearpygui.dearpygui as dpg

from gemmpad.ui import style
from gemmpad.ui.keys import Shortcut
from gemmpad.ui.learn_panel import help_section
from gemmpad.ui.style import Fonts

SECTIONS = (
    ("Draw", "Draw a digit on the canvas with the mouse or a pen; the ring under the pointer is the brush. "
             "The network reads it live as you draw. Clear is undoable; saved drawings (PNG + strokes) go "
             "under the label you pick, for fine-tuning."),
    ("Prediction", "The digit with the highest probability, how sure the network is, and all ten "
                   "probabilities. Below: the 28 x 28 input it really saw (your drawing cropped, scaled "
                   "and centred like MNIST); if a reading surprises you, look there first. When the drawing "
                   "does not look like one digit (a scribble, a letter, a shape, two digits), a detector says "
                   "so: ? and the network's best guess instead of a confident number. Below that, the two "
                   "hidden layers' activations (the shipped model's 100 + 100) as the selected kernel "
                   "wrote them, and what writing them out cost."),
    ("Engine", "Which backend (NumPy, the C++ CPU kernels, the CUDA GPU kernels) and which kernel runs the "
               "784-100-100-10 network. GEMM kernels run it layer by layer (three matrix products); mlp_ "
               "kernels run all of it in one call. Batch B runs B identical copies in one call: the same "
               "answer, B times the work. The Lab tab shows why a kernel is as fast as it is: its FLOP/s "
               "against the bytes it must move, under the device's ceilings, and its tiles and occupancy."),
    ("Kernel vs end-to-end", "Kernel time is the compute alone (CUDA events on the GPU, the C++ clock on "
                             "the CPU). End-to-end is what the app waits, from the input array to "
                             "probabilities in memory: it adds copies, launches, synchronisation and Python. "
                             "Cold (default): one call per frame, as an app runs; warm (W): after a few "
                             "untimed passes, as a benchmark measures."),
    ("Why the GPU can be slower at batch 1", "One digit is 0.2 MFLOP: the GPU finishes the maths in a few "
                                              "microseconds but each frame still pays a launch, the trips over "
                                              "PCIe and the wait for the result, ~10-50 us. The "
                                              "CPU kernel's data are already in its cache. When the same GPU "
                                              "also draws this window, its first CUDA work after each frame's "
                                              "drawing waits ~150 us more, most likely the GPU switching from "
                                              "the window's OpenGL to CUDA (an H100: ~190 us end to end, 45-75 with "
                                              "the window drawn on the CPU); no stream priority, sync mode or "
                                              "moment of submission avoided it. Raise the batch (+) to see where "
                                              "the GPU pulls ahead."),
)


class HelpOverlay:
    def __init__(self, fonts: Fonts, scale: float, shortcuts: list[Shortcut]) -> None:
        self.scale = scale
        with dpg.window(label="gemmpad help  (? or Esc closes)", show=False, modal=False, no_collapse=True,
                        no_saved_settings=True, on_close=lambda: self.toggle(False)) as self.root:
            self.texts = []
            for title, body in (*SECTIONS, help_section()):
                h = dpg.add_text(title.upper(), color=style.MUTED)
                dpg.bind_item_font(h, fonts.heading)
                self.texts.append(dpg.add_text(body, wrap=0))
            h = dpg.add_text("KEYS", color=style.MUTED)
            dpg.bind_item_font(h, fonts.heading)
            with dpg.table(header_row=False, policy=dpg.mvTable_SizingFixedFit) as table:
                dpg.add_table_column()
                dpg.add_table_column()
                for s in shortcuts:
                    if s.help:
                        with dpg.table_row():
                            dpg.add_text(s.help[0])
                            dpg.add_text(s.help[1], color=style.MUTED)
            dpg.bind_item_theme(table, style.compact_theme())

    @property
    def shown(self) -> bool:
        return bool(dpg.is_item_shown(self.root))

    def toggle(self, show: bool | None = None) -> None:
        dpg.configure_item(self.root, show=not self.shown if show is None else show)
        if self.shown:
            dpg.focus_item(self.root)

    def layout(self, width: int, height: int) -> None:
        """Centred, at most 640 px wide, inside the window."""
        m = round(20 * self.scale)
        w = min(round(640 * self.scale), width - 2 * m)
        h = height - 2 * m
        dpg.configure_item(self.root, width=w, height=h, pos=[(width - w) // 2, m])
