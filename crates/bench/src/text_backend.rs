//! A PNG bitmap backend for plotters that draws its text with ab_glyph and a TrueType file, so
//! charts need no system font libraries (plotters' own `ttf` feature pulls in fontconfig).

use std::path::{Path, PathBuf};

use ab_glyph::{point, Font, FontArc, Glyph, PxScale, ScaleFont};
use plotters::prelude::*;
use plotters_backend::text_anchor::{HPos, VPos};
use plotters_backend::{BackendColor, BackendCoord, BackendStyle, BackendTextStyle, DrawingBackend, DrawingErrorKind};

use crate::error::{BenchError, Result};

/// Fonts tried in order (Debian's fonts-dejavu-core first); `TESSERA_BENCH_FONT` overrides.
const FONT_CANDIDATES: &[&str] = &[
    "/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf",
    "/usr/share/fonts/truetype/liberation/LiberationSans-Regular.ttf",
    "/usr/share/fonts/truetype/freefont/FreeSans.ttf",
];

/// Loads the chart font, or says which package provides one.
pub fn load_font() -> Result<FontArc> {
    let from_env = std::env::var_os("TESSERA_BENCH_FONT").map(PathBuf::from);
    let path = from_env
        .into_iter()
        .chain(FONT_CANDIDATES.iter().map(PathBuf::from))
        .find(|p| p.is_file())
        .ok_or(BenchError::MissingTool {
            tool: "a TrueType font for the charts",
            fix: "apt-get install fonts-dejavu-core (scripts/install-deps.sh does), or set TESSERA_BENCH_FONT".into(),
        })?;
    read_font(&path)
}

fn read_font(path: &Path) -> Result<FontArc> {
    let bytes = std::fs::read(path).map_err(|e| BenchError::io(format!("reading {}", path.display()), e))?;
    FontArc::try_from_vec(bytes).map_err(|e| BenchError::Chart {
        path: path.to_path_buf(),
        why: format!("not a usable font: {e}"),
    })
}

/// plotters' bitmap backend with ab_glyph text.
pub struct TextBitmap<'a> {
    inner: BitMapBackend<'a>,
    font: FontArc,
}

impl<'a> TextBitmap<'a> {
    pub fn new(path: &'a Path, size: (u32, u32), font: FontArc) -> TextBitmap<'a> {
        TextBitmap {
            inner: BitMapBackend::new(path, size),
            font,
        }
    }

    /// Glyphs of `text` laid out on one line with the top at y = 0; returns them with the
    /// line's width and height.
    fn layout(&self, text: &str, px: f32) -> (Vec<Glyph>, f32, f32) {
        let scaled = self.font.as_scaled(PxScale::from(px));
        let mut x = 0.0f32;
        let mut prev = None;
        let mut glyphs = Vec::with_capacity(text.len());
        for ch in text.chars() {
            let id = scaled.glyph_id(ch);
            if let Some(p) = prev {
                x += scaled.kern(p, id);
            }
            glyphs.push(id.with_scale_and_position(px, point(x, scaled.ascent())));
            x += scaled.h_advance(id);
            prev = Some(id);
        }
        (glyphs, x, scaled.ascent() - scaled.descent())
    }
}

type BackendResult<T = ()> =
    std::result::Result<T, DrawingErrorKind<<BitMapBackend<'static> as DrawingBackend>::ErrorType>>;

impl DrawingBackend for TextBitmap<'_> {
    type ErrorType = <BitMapBackend<'static> as DrawingBackend>::ErrorType;

    fn get_size(&self) -> (u32, u32) {
        self.inner.get_size()
    }
    fn ensure_prepared(&mut self) -> BackendResult {
        self.inner.ensure_prepared()
    }
    fn present(&mut self) -> BackendResult {
        self.inner.present()
    }
    fn draw_pixel(&mut self, point: BackendCoord, color: BackendColor) -> BackendResult {
        self.inner.draw_pixel(point, color)
    }
    fn draw_line<S: BackendStyle>(&mut self, from: BackendCoord, to: BackendCoord, style: &S) -> BackendResult {
        self.inner.draw_line(from, to, style)
    }
    fn draw_rect<S: BackendStyle>(
        &mut self,
        ul: BackendCoord,
        br: BackendCoord,
        style: &S,
        fill: bool,
    ) -> BackendResult {
        self.inner.draw_rect(ul, br, style, fill)
    }
    fn draw_path<S: BackendStyle, I: IntoIterator<Item = BackendCoord>>(
        &mut self,
        path: I,
        style: &S,
    ) -> BackendResult {
        self.inner.draw_path(path, style)
    }
    fn draw_circle<S: BackendStyle>(&mut self, c: BackendCoord, r: u32, style: &S, fill: bool) -> BackendResult {
        self.inner.draw_circle(c, r, style, fill)
    }
    fn fill_polygon<S: BackendStyle, I: IntoIterator<Item = BackendCoord>>(
        &mut self,
        vert: I,
        style: &S,
    ) -> BackendResult {
        self.inner.fill_polygon(vert, style)
    }

    fn estimate_text_size<T: BackendTextStyle>(&self, text: &str, style: &T) -> BackendResult<(u32, u32)> {
        let (_, w, h) = self.layout(text, style.size() as f32);
        Ok((w.ceil() as u32, h.ceil() as u32))
    }

    fn draw_text<T: BackendTextStyle>(&mut self, text: &str, style: &T, pos: BackendCoord) -> BackendResult {
        let color = style.color();
        if color.alpha == 0.0 {
            return Ok(());
        }
        let (glyphs, w, h) = self.layout(text, style.size() as f32);
        let (w, h) = (w.ceil() as i32, h.ceil() as i32);
        let anchor = style.anchor();
        let dx = match anchor.h_pos {
            HPos::Left => 0,
            HPos::Right => -w,
            HPos::Center => -w / 2,
        };
        let dy = match anchor.v_pos {
            VPos::Top => 0,
            VPos::Center => -h / 2,
            VPos::Bottom => -h,
        };
        let transform = style.transform();
        let mut pixels = Vec::new();
        for glyph in glyphs {
            let Some(outlined) = self.font.outline_glyph(glyph) else {
                continue;
            };
            let bounds = outlined.px_bounds();
            outlined.draw(|gx, gy, coverage| {
                let x = bounds.min.x as i32 + gx as i32 + dx;
                let y = bounds.min.y as i32 + gy as i32 + dy;
                pixels.push((transform.transform(x, y), coverage));
            });
        }
        for ((x, y), coverage) in pixels {
            if coverage > 0.0 {
                let alpha = color.alpha * f64::from(coverage.min(1.0));
                self.inner
                    .draw_pixel((pos.0 + x, pos.1 + y), BackendColor { alpha, rgb: color.rgb })?;
            }
        }
        Ok(())
    }
}
