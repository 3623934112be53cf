"""Colours, fonts and the Dear PyGui theme: one place to change how the app looks.

Fonts are subsets of DejaVu Sans (fonts/LICENSE_DEJAVU) shipped inside the
package, so the app looks the same on a bare CI machine as on a desktop; the
digit-only subset keeps the 120 px font atlas small, which keeps start-up fast.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import dearpygui.dearpygui as dpg
import numpy as np

FONTS = Path(__file__).resolve().parent / "fonts"

RGB = tuple[int, int, int]

# Palette (0-255). The canvas shows ink bright on dark, exactly the model's polarity.
BG: RGB = (21, 23, 29)
PANEL: RGB = (29, 32, 40)
PANEL_BORDER: RGB = (47, 52, 64)
FRAME: RGB = (40, 44, 55)
FRAME_HOVER: RGB = (52, 58, 72)
FRAME_ACTIVE: RGB = (62, 69, 86)
TEXT: RGB = (226, 229, 236)
MUTED: RGB = (134, 141, 158)
ACCENT: RGB = (74, 163, 255)  # kernel latency, predicted bar, selected backend
ACCENT_HOVER: RGB = (104, 180, 255)
WARM: RGB = (255, 176, 82)  # end-to-end latency
GOOD: RGB = (92, 201, 128)
BAD: RGB = (240, 98, 98)
BAR: RGB = (78, 88, 112)
CANVAS_BG: RGB = (12, 13, 17)
INK: RGB = (246, 247, 250)

CANVAS_BG_F = np.array(CANVAS_BG, dtype=np.float32) / 255.0
INK_F = np.array(INK, dtype=np.float32) / 255.0


def rgba(c: RGB, a: int = 255) -> tuple[int, int, int, int]:
    return (*c, a)


def colourise(gray: np.ndarray, out: np.ndarray) -> None:
    """Map ink coverage [H, W] in [0, 1] to RGBA floats in `out` [H, W, 4], in place.

    Linear between the canvas background and the ink colour, so a texture
    value maps back to the exact coverage (the tests read the preview back).
    """
    out[..., :3] = CANVAS_BG_F + gray[..., None] * (INK_F - CANVAS_BG_F)
    out[..., 3] = 1.0


def coverage_from_rgba(texture: np.ndarray) -> np.ndarray:
    """Inverse of colourise() on the red channel."""
    return (texture[..., 0] - CANVAS_BG_F[0]) / (INK_F[0] - CANVAS_BG_F[0])


@dataclass(frozen=True)
class Fonts:
    body: int | str
    small: int | str
    heading: int | str
    figure: int | str  # latency numbers, confidence
    digit: int | str  # the predicted digit


def load_fonts(scale: float = 1.0) -> Fonts:
    """Register the fonts at UI scale `scale` (call once per Dear PyGui context; rasterised
    at the final size, so text stays sharp at any scale) and bind the body font."""
    regular, bold = str(FONTS / "DejaVuSans.ttf"), str(FONTS / "DejaVuSans-Bold.ttf")
    # Dear PyGui 2.3 builds glyphs on demand, so no character ranges are declared.
    with dpg.font_registry():
        body = dpg.add_font(regular, round(15 * scale))
        small = dpg.add_font(regular, round(13 * scale))
        heading = dpg.add_font(bold, round(13 * scale))
        figure = dpg.add_font(bold, round(24 * scale))
        digit = dpg.add_font(str(FONTS / "DejaVuSans-Bold-digits.ttf"), round(112 * scale))
    dpg.bind_font(body)
    return Fonts(body=body, small=small, heading=heading, figure=figure, digit=digit)


def global_theme(scale: float = 1.0) -> int | str:
    """Dark, flat, rounded: the frame of the whole window; spacing grows with the UI scale."""
    s = scale
    core = dpg.mvThemeCat_Core
    plots = dpg.mvThemeCat_Plots
    with dpg.theme() as theme:
        with dpg.theme_component(dpg.mvAll):
            for target, colour in (
                (dpg.mvThemeCol_WindowBg, BG),
                (dpg.mvThemeCol_ChildBg, PANEL),
                (dpg.mvThemeCol_PopupBg, PANEL),
                (dpg.mvThemeCol_Border, PANEL_BORDER),
                (dpg.mvThemeCol_FrameBg, FRAME),
                (dpg.mvThemeCol_FrameBgHovered, FRAME_HOVER),
                (dpg.mvThemeCol_FrameBgActive, FRAME_ACTIVE),
                (dpg.mvThemeCol_Button, FRAME),
                (dpg.mvThemeCol_ButtonHovered, FRAME_HOVER),
                (dpg.mvThemeCol_ButtonActive, FRAME_ACTIVE),
                (dpg.mvThemeCol_Header, FRAME_HOVER),
                (dpg.mvThemeCol_HeaderHovered, FRAME_ACTIVE),
                (dpg.mvThemeCol_HeaderActive, ACCENT),
                (dpg.mvThemeCol_SliderGrab, ACCENT),
                (dpg.mvThemeCol_SliderGrabActive, ACCENT_HOVER),
                (dpg.mvThemeCol_CheckMark, ACCENT),
                (dpg.mvThemeCol_Text, TEXT),
                (dpg.mvThemeCol_TextDisabled, MUTED),
                (dpg.mvThemeCol_Separator, PANEL_BORDER),
                (dpg.mvThemeCol_ScrollbarBg, PANEL),
                (dpg.mvThemeCol_TableBorderLight, PANEL_BORDER),
                (dpg.mvThemeCol_TableBorderStrong, PANEL_BORDER),
                (dpg.mvThemeCol_TableHeaderBg, PANEL),
            ):
                dpg.add_theme_color(target, rgba(colour), category=core)
            dpg.add_theme_style(dpg.mvStyleVar_WindowPadding, 14 * s, 12 * s, category=core)
            dpg.add_theme_style(dpg.mvStyleVar_FramePadding, 9 * s, 5 * s, category=core)
            dpg.add_theme_style(dpg.mvStyleVar_ItemSpacing, 8 * s, 8 * s, category=core)
            dpg.add_theme_style(dpg.mvStyleVar_ItemInnerSpacing, 6 * s, 4 * s, category=core)
            dpg.add_theme_style(dpg.mvStyleVar_CellPadding, 6 * s, 3 * s, category=core)
            dpg.add_theme_style(dpg.mvStyleVar_ChildRounding, 8 * s, category=core)
            dpg.add_theme_style(dpg.mvStyleVar_FrameRounding, 5 * s, category=core)
            dpg.add_theme_style(dpg.mvStyleVar_GrabRounding, 4 * s, category=core)
            dpg.add_theme_style(dpg.mvStyleVar_PopupRounding, 5 * s, category=core)
            dpg.add_theme_style(dpg.mvStyleVar_WindowBorderSize, 0, category=core)
            dpg.add_theme_style(dpg.mvStyleVar_ChildBorderSize, 1, category=core)
            dpg.add_theme_style(dpg.mvStyleVar_DisabledAlpha, 0.45, category=core)
            dpg.add_theme_color(dpg.mvPlotCol_FrameBg, rgba(PANEL, 0), category=plots)
            dpg.add_theme_color(dpg.mvPlotCol_PlotBg, rgba(BG), category=plots)
            dpg.add_theme_color(dpg.mvPlotCol_PlotBorder, rgba(PANEL_BORDER, 0), category=plots)
            dpg.add_theme_color(dpg.mvPlotCol_AxisGrid, rgba(PANEL_BORDER), category=plots)
            dpg.add_theme_color(dpg.mvPlotCol_AxisText, rgba(MUTED), category=plots)
            dpg.add_theme_color(dpg.mvPlotCol_LegendBg, rgba(BG, 220), category=plots)
            dpg.add_theme_color(dpg.mvPlotCol_LegendBorder, rgba(PANEL_BORDER), category=plots)
            dpg.add_theme_color(dpg.mvPlotCol_LegendText, rgba(TEXT), category=plots)
            dpg.add_theme_style(dpg.mvPlotStyleVar_PlotPadding, 6 * s, 6 * s, category=plots)
            dpg.add_theme_style(dpg.mvPlotStyleVar_LineWeight, 1.6 * s, category=plots)
    return theme


def series_theme(series_type: int, colour: RGB, fill_alpha: int = 255, markers: bool = False) -> int | str:
    """Colour one plot series (a line's stroke, a bar's fill); `markers`: a dot on each point
    (a line through one or two points draws nothing visible)."""
    plots = dpg.mvThemeCat_Plots
    with dpg.theme() as theme:
        with dpg.theme_component(series_type):
            dpg.add_theme_color(dpg.mvPlotCol_Line, rgba(colour), category=plots)
            dpg.add_theme_color(dpg.mvPlotCol_Fill, rgba(colour, fill_alpha), category=plots)
            if markers:
                dpg.add_theme_color(dpg.mvPlotCol_MarkerFill, rgba(colour), category=plots)
                dpg.add_theme_color(dpg.mvPlotCol_MarkerOutline, rgba(colour), category=plots)
                dpg.add_theme_style(dpg.mvPlotStyleVar_Marker, dpg.mvPlotMarker_Circle, category=plots)
                dpg.add_theme_style(dpg.mvPlotStyleVar_MarkerSize, 3.5, category=plots)
    return theme


def button_theme(colour: RGB, hover: RGB, text: RGB = (255, 255, 255)) -> int | str:
    """A filled button (the selected backend is accent-filled); greyed out when disabled."""
    core = dpg.mvThemeCat_Core
    with dpg.theme() as theme:
        with dpg.theme_component(dpg.mvButton):
            dpg.add_theme_color(dpg.mvThemeCol_Button, rgba(colour), category=core)
            dpg.add_theme_color(dpg.mvThemeCol_ButtonHovered, rgba(hover), category=core)
            dpg.add_theme_color(dpg.mvThemeCol_ButtonActive, rgba(hover), category=core)
            dpg.add_theme_color(dpg.mvThemeCol_Text, rgba(text), category=core)
        with dpg.theme_component(dpg.mvButton, enabled_state=False):
            for target in (dpg.mvThemeCol_Button, dpg.mvThemeCol_ButtonHovered, dpg.mvThemeCol_ButtonActive):
                dpg.add_theme_color(target, rgba(PANEL), category=core)
            dpg.add_theme_color(dpg.mvThemeCol_Text, rgba(MUTED, 150), category=core)
            dpg.add_theme_style(dpg.mvStyleVar_FrameBorderSize, 1, category=core)
    return theme


def panel_theme(colour: RGB, scale: float = 1.0) -> int | str:
    """A child window with another background (the status bar)."""
    with dpg.theme() as theme:
        with dpg.theme_component(dpg.mvChildWindow):
            dpg.add_theme_color(dpg.mvThemeCol_ChildBg, rgba(colour), category=dpg.mvThemeCat_Core)
            dpg.add_theme_style(dpg.mvStyleVar_WindowPadding, 12 * scale, 5 * scale, category=dpg.mvThemeCat_Core)
    return theme


def compact_theme() -> int | str:
    """Tighter rows and cells (the key table)."""
    with dpg.theme() as theme:
        with dpg.theme_component(dpg.mvAll):
            dpg.add_theme_style(dpg.mvStyleVar_ItemSpacing, 8, 3, category=dpg.mvThemeCat_Core)
            dpg.add_theme_style(dpg.mvStyleVar_CellPadding, 4, 1, category=dpg.mvThemeCat_Core)
    return theme


def padded_theme(scale: float = 1.0) -> int | str:
    """A panel's own padding: binds it on the panel so a flush container around it
    (flush_theme, inherited by everything inside) does not take it away."""
    with dpg.theme() as theme:
        with dpg.theme_component(dpg.mvChildWindow):
            dpg.add_theme_style(dpg.mvStyleVar_WindowPadding, 12 * scale, 10 * scale, category=dpg.mvThemeCat_Core)
            dpg.add_theme_color(dpg.mvThemeCol_ChildBg, rgba(PANEL), category=dpg.mvThemeCat_Core)
    return theme


def menu_button_theme() -> int | str:
    """A button that opens a menu, drawn as a combo box: frame colours, text on the left."""
    core = dpg.mvThemeCat_Core
    with dpg.theme() as theme:
        with dpg.theme_component(dpg.mvButton):
            dpg.add_theme_color(dpg.mvThemeCol_Button, rgba(FRAME), category=core)
            dpg.add_theme_color(dpg.mvThemeCol_ButtonHovered, rgba(FRAME_HOVER), category=core)
            dpg.add_theme_color(dpg.mvThemeCol_ButtonActive, rgba(FRAME_ACTIVE), category=core)
            dpg.add_theme_style(dpg.mvStyleVar_ButtonTextAlign, 0.0, 0.5, category=core)
    return theme


def menu_theme() -> int | str:
    """The kernel menu: entries this machine cannot run greyed like a disabled button."""
    with dpg.theme() as theme:
        with dpg.theme_component(dpg.mvSelectable, enabled_state=False):
            dpg.add_theme_color(dpg.mvThemeCol_Text, rgba(MUTED, 150), category=dpg.mvThemeCat_Core)
    return theme


def flush_theme() -> int | str:
    """No padding: a child window that only reserves room for its text."""
    with dpg.theme() as theme:
        with dpg.theme_component(dpg.mvChildWindow):
            dpg.add_theme_style(dpg.mvStyleVar_WindowPadding, 0, 0, category=dpg.mvThemeCat_Core)
            dpg.add_theme_color(dpg.mvThemeCol_ChildBg, rgba(PANEL, 0), category=dpg.mvThemeCat_Core)
    return theme


def heat(values: np.ndarray, out: np.ndarray) -> None:
    """Map activations [H, W] >= 0 to RGBA floats in `out` [H, W, 4], scaled to their own
    maximum: the background for 0, the accent colour halfway, the ink colour at the top."""
    top = float(values.max()) if values.size else 0.0
    v = np.clip(values / top, 0.0, 1.0)[..., None] if top > 0 else np.zeros((*values.shape, 1), np.float32)
    accent = np.array(ACCENT, dtype=np.float32) / 255.0
    low = CANVAS_BG_F + np.minimum(v, 0.5) * 2 * (accent - CANVAS_BG_F)
    out[..., :3] = np.where(v <= 0.5, low, accent + (v - 0.5) * 2 * (INK_F - accent))
    out[..., 3] = 1.0
