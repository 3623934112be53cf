"""The one image loader (gemmpad.inputs.images): any decoder failure is the file's error,
warnings are the file's notes, and large images are reduced before conversion
(issue 20, findings 1, 11 and 12)."""

from __future__ import annotations

import io
import struct
import warnings
import zlib
from pathlib import Path

import numpy as np
import pytest
from PIL import Image, ImageDraw

from gemmpad.errors import ImageError
from gemmpad.inputs.images import MAX_SIDE, image_paths, load_image
from tests.hostile_files import broken_idat


def digit_png(size: int = 64) -> bytes:
    im = Image.new("L", (size, size), 255)
    ImageDraw.Draw(im).line([(size * 0.55, size * 0.15), (size * 0.45, size * 0.85)], fill=0, width=max(2, size // 10))
    buf = io.BytesIO()
    im.save(buf, "PNG")
    return buf.getvalue()


def test_a_good_png_reads(tmp_path: Path) -> None:
    (tmp_path / "a.png").write_bytes(digit_png())
    pixels, notes = load_image(tmp_path / "a.png")
    assert pixels.shape == (64, 64) and pixels.dtype == np.uint8 and pixels.min() == 0 and notes == []


@pytest.mark.parametrize("delta", [-8, -16])
def test_a_corrupt_chunk_is_an_image_error(tmp_path: Path, delta: int) -> None:
    (tmp_path / "bad.png").write_bytes(broken_idat(digit_png(), delta))
    with pytest.raises(ImageError, match=r"bad.png: cannot read image: SyntaxError"):
        load_image(tmp_path / "bad.png")


def test_decoder_exceptions_of_any_type_are_image_errors(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """NotImplementedError (DDS), BLPFormatError, struct.error...: whatever a plugin raises."""
    (tmp_path / "a.png").write_bytes(digit_png())
    for exc in (NotImplementedError("DXT10 not supported"), struct.error("unpack"), KeyError("mode"), MemoryError()):
        def boom(self: Image.Image, exc: Exception = exc) -> None:
            raise exc

        monkeypatch.setattr(Image.Image, "load", boom)
        with pytest.raises(ImageError, match=f"cannot read image: {type(exc).__name__}"):
            load_image(tmp_path / "a.png")


def test_pillow_warnings_become_the_files_notes(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Pillow warns inside Image.open (before today's filter was set): nothing may reach the
    global warnings; the bomb warning is dropped (the image is reduced), others are notes."""
    (tmp_path / "a.png").write_bytes(digit_png(64))
    monkeypatch.setattr(Image, "MAX_IMAGE_PIXELS", 3000)  # 4096 pixels: a "bomb" warning, not yet an error
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        pixels, notes = load_image(tmp_path / "a.png")
    assert pixels.shape == (64, 64) and notes == []
    real_open = Image.open

    def warn_open(*args: object, **kwargs: object) -> Image.Image:
        warnings.warn("Corrupt EXIF data", UserWarning)
        return real_open(*args, **kwargs)

    monkeypatch.setattr(Image, "open", warn_open)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert load_image(tmp_path / "a.png")[1] == ["Corrupt EXIF data"]


def test_large_images_are_reduced_before_conversion(tmp_path: Path) -> None:
    """An RGBA image wider than MAX_SIDE comes back at most MAX_SIDE wide (converting the
    full frame to grey on white paper is what took 3.45 GB near Pillow's pixel limit)."""
    im = Image.new("RGBA", (MAX_SIDE * 2 + 10, 64), (0, 0, 0, 0))
    ImageDraw.Draw(im).line([(MAX_SIDE, 5), (MAX_SIDE, 60)], fill=(0, 0, 0, 255), width=40)
    im.save(tmp_path / "wide.png")
    pixels, _ = load_image(tmp_path / "wide.png")
    assert max(pixels.shape) <= MAX_SIDE and pixels.min() < 128  # the ink survived the reduction
    rgb = Image.new("RGB", (MAX_SIDE * 3, 300), (255, 255, 255))
    rgb.save(tmp_path / "wide.jpg", quality=80)
    assert max(load_image(tmp_path / "wide.jpg")[0].shape) <= MAX_SIDE  # JPEG: decoded small (draft)


def stroke_on_clear(colour: tuple[int, int, int], size: int = 64) -> Image.Image:
    """A slanted bar of `colour`, anti-aliased edges and all, on a fully transparent canvas."""
    im = Image.new("RGBA", (size, size), (*colour, 0))
    ImageDraw.Draw(im).line([(size * 0.55, size * 0.15), (size * 0.45, size * 0.85)], fill=(*colour, 255),
                            width=size // 8)
    return im.resize((size // 2, size // 2), Image.Resampling.LANCZOS)  # partial alpha along the edges


@pytest.mark.parametrize("mode", ["RGBA", "LA"])
def test_strokes_on_a_transparent_background_are_read_by_their_alpha(tmp_path: Path, mode: str) -> None:
    """White ink on a transparent background, composited over white paper, read as "no ink found":
    where the alpha varies and the strokes are of one tone, the alpha is the ink, whatever the
    colour. Black ink reads as compositing made it (within a level of rounding)."""
    from gemmpad.inputs.preprocess import preprocess

    black = stroke_on_clear((0, 0, 0))
    alpha = np.asarray(black.getchannel("A"))
    old = np.asarray(Image.alpha_composite(Image.new("RGBA", black.size, (255,) * 4), black).convert("L"))
    for name, colour in (("white", (255, 255, 255)), ("yellow", (250, 240, 120)), ("black", (0, 0, 0))):
        stroke_on_clear(colour).convert(mode).save(tmp_path / f"{name}.png")
        pixels, _ = load_image(tmp_path / f"{name}.png")
        assert pixels.dtype == np.uint8 and preprocess(pixels) is not None, name
        np.testing.assert_array_equal(pixels, 255 - alpha, err_msg=name)
    assert np.abs(load_image(tmp_path / "black.png")[0].astype(int) - old).max() <= 1


def test_a_sheet_with_transparent_corners_is_read_by_its_colours(tmp_path: Path) -> None:
    """An opaque white sheet with dark ink and transparent rounded corners: its alpha outlines the
    sheet, not the strokes, so the colours are read (by the alpha the sheet would be one blob of ink)."""
    sheet = Image.new("RGBA", (64, 64), (0, 0, 0, 0))
    ImageDraw.Draw(sheet).rounded_rectangle((0, 0, 63, 63), radius=12, fill=(255, 255, 255, 255))
    ImageDraw.Draw(sheet).line([(35, 10), (29, 54)], fill=(0, 0, 0, 255), width=8)
    sheet.save(tmp_path / "sheet.png")
    pixels, _ = load_image(tmp_path / "sheet.png")
    assert pixels[32, 32] == 0 and pixels[32, 10] == 255 and pixels[0, 0] == 255  # ink, sheet, corner


@pytest.mark.parametrize(("top", "scale"), [(255, 255), (1000, 1023), (2000, 4095), (4095, 4095), (9000, 16383),
                                            (50_000, 65535), (65535, 65535), (200_000, 200_000)])
def test_integer_images_are_scaled_by_the_range_their_values_use(tmp_path: Path, top: int, scale: int) -> None:
    """A 32-bit TIFF of 0..255, or a 12-bit camera's 0..4095, was divided by 65535 and read as blank:
    values are scaled by the least sensor depth (8, 10, 12, 14, 16 bits) that holds them, anything
    larger by its own maximum."""
    from gemmpad.inputs.preprocess import preprocess

    grey = np.asarray(Image.open(io.BytesIO(digit_png())), dtype=np.int64) * top // 255  # ink 0, paper `top`
    Image.fromarray(grey.astype(np.int32), mode="I").save(tmp_path / "i32.tif")
    pixels, _ = load_image(tmp_path / "i32.tif")
    assert pixels.dtype == np.float32 and pixels.max() == np.float32(top / scale)
    assert preprocess(pixels) is not None


@pytest.mark.parametrize(("ink", "paper", "bits"), [(-32768, 32767, 16), (-128, 127, 16), (-255, 0, 16),
                                                     (-100_000, 100_000, 32)])
def test_signed_integer_images_are_read_from_their_minimum(tmp_path: Path, ink: int, paper: int, bits: int) -> None:
    """A signed 16-bit TIFF (SampleFormat 2) or a 32-bit one with negative values kept them negative
    (-32768..32767 became -0.5..0.5): the darkest value is now 0 and the span is scaled as an unsigned
    image's values are, so the digit reads as its 8-bit original."""
    from gemmpad.inputs.preprocess import preprocess

    grey = np.asarray(Image.open(io.BytesIO(digit_png())), dtype=np.int64)
    values = ink + grey * (paper - ink) // 255
    if bits == 16:  # written as 16-bit samples marked signed: Pillow's own int16 arrays become 32-bit "I"
        Image.frombytes("I;16", grey.shape[::-1], values.astype("<i2").tobytes()).save(tmp_path / "s.tif",
                                                                                          tiffinfo={339: 2})
    else:
        Image.fromarray(values.astype(np.int32), mode="I").save(tmp_path / "s.tif")
    pixels, _ = load_image(tmp_path / "s.tif")
    assert pixels.dtype == np.float32 and pixels.min() == 0.0 and pixels.max() == 1.0
    np.testing.assert_allclose(preprocess(pixels), preprocess(grey.astype(np.uint8)), atol=0.02)


def test_float_pixels_beyond_float32_are_named_as_such(tmp_path: Path) -> None:
    im = Image.fromarray(np.full((8, 8), 3e38, np.float32), mode="F")
    im.save(tmp_path / "f.tif")
    raw = (tmp_path / "f.tif").read_bytes().replace(struct.pack("<f", 3e38), struct.pack("<f", np.inf))
    (tmp_path / "f.tif").write_bytes(raw)
    with pytest.raises(ImageError, match="beyond float32's range"):
        load_image(tmp_path / "f.tif")


def test_directory_scan_reports_what_it_cannot_read(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "a.png").write_bytes(digit_png())
    (tmp_path / ".hidden.png").write_bytes(digit_png())
    (tmp_path / "loop.png").symlink_to(tmp_path / "loop.png")
    import os

    real_scandir = os.scandir

    def scandir(path: object) -> object:  # as an unreadable folder (root reads everything, so simulated)
        if str(path).endswith("sub"):
            raise PermissionError(13, "Permission denied", str(path))
        return real_scandir(path)

    monkeypatch.setattr(os, "scandir", scandir)
    found = list(image_paths(tmp_path))
    assert found == [(tmp_path / "sub", "cannot read directory (Permission denied)")]


def test_zlib_bomb_png_is_refused_or_reduced(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A PNG whose header claims more pixels than Pillow allows is an error, never a decode, said
    in one line of gemmpad's (it was Pillow's "DecompressionBombError: ... could be decompression
    bomb DOS attack."); should Pillow's wording change, the limit alone is said."""
    png = digit_png(8)
    ihdr = png.index(b"IHDR")
    body = png[ihdr : ihdr + 4 + 13]
    new = b"IHDR" + struct.pack(">II", 100_000, 100_000) + body[12:]
    png = png[: ihdr] + new + struct.pack(">I", zlib.crc32(new)) + png[ihdr + 4 + 13 + 4 :]
    (tmp_path / "bomb.png").write_bytes(png)
    with pytest.raises(ImageError) as info:
        load_image(tmp_path / "bomb.png")
    assert str(info.value) == (f"{tmp_path / 'bomb.png'}: the image is too large (10,000,000,000 pixels; at most "
                               "178,956,970): scale it down (a digit needs a few hundred pixels a side)")

    def reworded(*args: object, **kwargs: object) -> Image.Image:
        raise Image.DecompressionBombError("too big")

    monkeypatch.setattr(Image, "open", reworded)
    with pytest.raises(ImageError, match=r"bomb.png: the image is too large \(over 178,956,970 pixels\): scale"):
        load_image(tmp_path / "bomb.png")


def test_decoded_size_is_capped_by_memory_not_pixels(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Pillow's limit counts pixels: near it an RGBA frame alone is 358 MB, and a palette image
    converted before reduction more. The loader refuses what would decode past MAX_DECODE_BYTES."""
    from gemmpad.inputs import images

    Image.new("RGBA", (300, 200), (0, 0, 0, 0)).save(tmp_path / "a.png")
    monkeypatch.setattr(images, "MAX_DECODE_BYTES", 300 * 200 * 4 - 1)
    with pytest.raises(ImageError, match=r"too large to read: 300x200 pixels of mode RGBA would take 0 MB"):
        load_image(tmp_path / "a.png")
    monkeypatch.setattr(images, "MAX_DECODE_BYTES", 300 * 200 * 4)
    assert load_image(tmp_path / "a.png")[0].shape == (200, 300)


def test_reduction_by_strips_equals_reducing_the_whole_frame(monkeypatch: pytest.MonkeyPatch) -> None:
    from gemmpad.inputs import images

    rng = np.random.default_rng(7)
    im = Image.fromarray(rng.integers(0, 256, (1001, 37, 3), dtype=np.uint8), "RGB")
    monkeypatch.setattr(images, "STRIP_BYTES", 37 * 4 * 11 * 3)  # strips of 33 rows, the last one short
    out = images._reduced(im, 11)
    assert out.size == im.reduce(11).size
    np.testing.assert_array_equal(np.asarray(out), np.asarray(im.reduce(11)))
    p = Image.fromarray(rng.integers(0, 4, (50, 40), dtype=np.uint8), "P")
    p.putpalette([0, 0, 0, 255, 255, 255, 128, 128, 128, 30, 60, 90])
    np.testing.assert_array_equal(np.asarray(images._reduced(p, 3)), np.asarray(p.convert("L").reduce(3)))


# A 40x40 deflated TIFF from the fuzz test (seed 3, case 62) with a mangled tag: libtiff
# prints "TIFFFetchNormalTag: ..." straight to file descriptor 2, where no file was named.
LIBTIFF_WARNS = (
    "SUkqACoAAAB4nPv/fxT8ZwCCQaxukDtvNFgGlbpB7rzRYBlWAADVvsaACQAAAQMAAQAAACgAAAABAQMAAQAAACgAAAACAQMAAQAAAAgAAAAD"
    "AQMAAQAAAAgAAAAGAQMAAQAAAAEAAAARAQQAAQAAAAgAAAAWAQMAAQAAACgA3q7r7UXIrsIaje+bAAAXAQQAAQAAACIAAAAcAQMAAQAAAAEA"
    "AAAAAAAA"
)


def test_libtiff_messages_are_the_files_notes(tmp_path: Path, capfd: pytest.CaptureFixture[str]) -> None:
    """Finding 11: libtiff's messages reached stderr untied to any file."""
    import base64

    (tmp_path / "odd.tif").write_bytes(base64.b64decode(LIBTIFF_WARNS))
    pixels, notes = load_image(tmp_path / "odd.tif")
    assert pixels.shape == (40, 40)
    assert any(n.startswith("TIFFFetchNormalTag: ") for n in notes)
    assert "TIFFFetchNormalTag" not in capfd.readouterr().err


_PEAK = """
import resource, sys
from gemmpad.inputs.images import load_image
before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
pixels, _ = load_image(sys.argv[1])
print(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before, *pixels.shape)
"""


@pytest.mark.slow
def test_peak_memory_stays_near_one_decoded_frame(tmp_path: Path) -> None:
    """Finding 12: an RGBA PNG near Pillow's pixel limit peaked at 3.45 GB, about ten decoded
    frames (decode, RGBA copy, white paper, composite, grey). Here a 6000 px square RGBA PNG
    (a 144 MB frame; 690 MB above the imports through the old path, 228 MB now, 2026-11-26)
    is read in a fresh process, whose peak RSS must stay under two frames."""
    import subprocess
    import sys

    side = 6000
    im = Image.new("RGBA", (side, side), (0, 0, 0, 0))
    ImageDraw.Draw(im).line([(side * 0.55, side * 0.15), (side * 0.45, side * 0.85)], fill=(0, 0, 0, 255),
                            width=side // 10)
    im.save(tmp_path / "big.png", compress_level=1)
    del im
    proc = subprocess.run([sys.executable, "-c", _PEAK, str(tmp_path / "big.png")], capture_output=True, text=True,
                          check=True, timeout=120)
    grown_kb, h, w = map(int, proc.stdout.split())
    frame_kb = side * side * 4 // 1024
    assert max(h, w) <= MAX_SIDE
    assert grown_kb < 2 * frame_kb, f"{grown_kb / 1024:.0f} MB above the imports for a {frame_kb / 1024:.0f} MB frame"
