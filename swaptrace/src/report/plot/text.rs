//! Text for the charts, drawn with room around each glyph.
//!
//! plotters' `ttf` font rasterizes every glyph into a square that starts at
//! the glyph's origin, so a glyph reaching left of it (the hook of "j" in
//! DejaVu Sans and most sans fonts) loses that part: "major" printed as
//! "ma‚or". [`Glyphs`] wraps a backend and draws text itself: the string is
//! rasterized once into a canvas padded on every side, with the font
//! fontconfig picks for the family (DejaVu Sans first, then the default
//! sans-serif), then placed the way plotters places it (same layout box, so
//! the label areas plotters computes still fit).

use font_kit::canvas::{Canvas, Format, RasterizationOptions};
use font_kit::family_name::FamilyName;
use font_kit::font::Font;
use font_kit::hinting::HintingOptions;
use font_kit::properties::Properties;
use font_kit::source::SystemSource;
use pathfinder_geometry::transform2d::Transform2F;
use pathfinder_geometry::vector::{Vector2F, Vector2I};
use plotters_backend::text_anchor::{HPos, VPos};
use plotters_backend::{BackendColor, BackendCoord, BackendStyle, BackendTextStyle, FontFamily};
use plotters_backend::{DrawingBackend, DrawingErrorKind};
use std::collections::HashMap;

thread_local! {
    static FONTS: std::cell::RefCell<HashMap<String, Option<Font>>> =
        std::cell::RefCell::new(HashMap::new());
}

/// The font for a family: DejaVu Sans when asked for sans-serif and it is
/// installed, else fontconfig's best match for the family.
fn font(family: &FontFamily) -> Option<Font> {
    let key = family.as_str().to_string();
    FONTS.with(|f| {
        f.borrow_mut()
            .entry(key)
            .or_insert_with(|| {
                let mut names = match family {
                    FontFamily::SansSerif => vec![FamilyName::Title("DejaVu Sans".into())],
                    FontFamily::Name(n) => vec![FamilyName::Title((*n).to_string())],
                    _ => Vec::new(),
                };
                names.push(match family {
                    FontFamily::Serif => FamilyName::Serif,
                    FontFamily::Monospace => FamilyName::Monospace,
                    _ => FamilyName::SansSerif,
                });
                SystemSource::new()
                    .select_best_match(&names, &Properties::new())
                    .ok()?
                    .load()
                    .ok()
            })
            .clone()
    })
}

/// A grey-level image of `text`, `pad` pixels of room on each side, with
/// its baseline where plotters puts it (0.76 em below the top of the box).
pub(super) struct Raster {
    pub pixels: Vec<u8>,
    pub width: usize,
    pub height: usize,
    pub pad: i32,
}

/// Rasterizes `text` at plotters' `size` (1.24 em), or None without a font.
pub(super) fn raster(family: &FontFamily, size: f64, text: &str) -> Option<Raster> {
    let font = font(family)?;
    let em = (size / 1.24) as f32;
    let upem = font.metrics().units_per_em as f32;
    let pad = (em * 0.5).ceil() as i32 + 1;
    let glyphs: Vec<u32> = text
        .chars()
        .filter_map(|c| font.glyph_for_char(c).or_else(|| font.glyph_for_char('?')))
        .collect();
    let advance: f32 = glyphs
        .iter()
        .map(|&g| font.advance(g).map(|a| a.x()).unwrap_or(0.0) * em / upem)
        .sum();
    let width = advance.ceil() as i32 + 2 * pad;
    let height = em.ceil() as i32 + 2 * pad;
    let mut canvas = Canvas::new(Vector2I::new(width, height), Format::A8);
    let mut x = pad as f32;
    for g in glyphs {
        let at = Transform2F::from_translation(Vector2F::new(x, pad as f32 + 0.76 * em));
        // A glyph that does not rasterize is left blank, as plotters does.
        let _ = font.rasterize_glyph(
            &mut canvas,
            g,
            em,
            at,
            HintingOptions::None,
            RasterizationOptions::GrayscaleAa,
        );
        x += font.advance(g).map(|a| a.x()).unwrap_or(0.0) * em / upem;
    }
    Some(Raster {
        width: canvas.stride,
        height: canvas.size.y() as usize,
        pixels: canvas.pixels,
        pad,
    })
}

/// A backend whose text is drawn by [`raster`]; everything else is `B`'s.
pub struct Glyphs<B>(pub B);

impl<B: DrawingBackend> DrawingBackend for Glyphs<B> {
    type ErrorType = B::ErrorType;

    fn get_size(&self) -> (u32, u32) {
        self.0.get_size()
    }
    fn ensure_prepared(&mut self) -> Result<(), DrawingErrorKind<B::ErrorType>> {
        self.0.ensure_prepared()
    }
    fn present(&mut self) -> Result<(), DrawingErrorKind<B::ErrorType>> {
        self.0.present()
    }
    fn draw_pixel(
        &mut self,
        p: BackendCoord,
        c: BackendColor,
    ) -> Result<(), DrawingErrorKind<B::ErrorType>> {
        self.0.draw_pixel(p, c)
    }
    fn draw_line<S: BackendStyle>(
        &mut self,
        a: BackendCoord,
        b: BackendCoord,
        s: &S,
    ) -> Result<(), DrawingErrorKind<B::ErrorType>> {
        self.0.draw_line(a, b, s)
    }
    fn draw_rect<S: BackendStyle>(
        &mut self,
        a: BackendCoord,
        b: BackendCoord,
        s: &S,
        fill: bool,
    ) -> Result<(), DrawingErrorKind<B::ErrorType>> {
        self.0.draw_rect(a, b, s, fill)
    }
    fn draw_path<S: BackendStyle, I: IntoIterator<Item = BackendCoord>>(
        &mut self,
        path: I,
        s: &S,
    ) -> Result<(), DrawingErrorKind<B::ErrorType>> {
        self.0.draw_path(path, s)
    }
    fn draw_circle<S: BackendStyle>(
        &mut self,
        c: BackendCoord,
        r: u32,
        s: &S,
        fill: bool,
    ) -> Result<(), DrawingErrorKind<B::ErrorType>> {
        self.0.draw_circle(c, r, s, fill)
    }
    fn fill_polygon<S: BackendStyle, I: IntoIterator<Item = BackendCoord>>(
        &mut self,
        v: I,
        s: &S,
    ) -> Result<(), DrawingErrorKind<B::ErrorType>> {
        self.0.fill_polygon(v, s)
    }
    fn blit_bitmap(
        &mut self,
        pos: BackendCoord,
        size: (u32, u32),
        src: &[u8],
    ) -> Result<(), DrawingErrorKind<B::ErrorType>> {
        self.0.blit_bitmap(pos, size, src)
    }

    /// plotters' placement (anchor, rotation) with [`raster`]'s pixels;
    /// falls back to the wrapped backend when no font is found.
    fn draw_text<T: BackendTextStyle>(
        &mut self,
        text: &str,
        style: &T,
        pos: BackendCoord,
    ) -> Result<(), DrawingErrorKind<B::ErrorType>> {
        let color = style.color();
        if color.alpha == 0.0 {
            return Ok(());
        }
        let Some(r) = raster(&style.family(), style.size(), text) else {
            return self.0.draw_text(text, style, pos);
        };
        let ((x0, y0), (x1, y1)) = style
            .layout_box(text)
            .map_err(|e| DrawingErrorKind::FontError(Box::new(e)))?;
        let (w, h) = (x1 - x0, y1 - y0);
        let dx = match style.anchor().h_pos {
            HPos::Left => 0,
            HPos::Right => -w,
            HPos::Center => -w / 2,
        };
        let dy = match style.anchor().v_pos {
            VPos::Top => 0,
            VPos::Center => -h / 2,
            VPos::Bottom => -h,
        };
        let trans = style.transform();
        let (sw, sh) = self.get_size();
        for cy in 0..r.height {
            for cx in 0..r.width {
                let a = r.pixels[cy * r.width + cx];
                if a == 0 {
                    continue;
                }
                let (x, y) = (cx as i32 - r.pad, cy as i32 - r.pad);
                let (x, y) = trans.transform(x + dx - x0, y + dy - y0);
                let (x, y) = (pos.0 + x, pos.1 + y);
                if x >= 0 && x < sw as i32 && y >= 0 && y < sh as i32 {
                    let c = BackendColor {
                        alpha: color.alpha * f64::from(a) / 255.0,
                        rgb: color.rgb,
                    };
                    self.0.draw_pixel((x, y), c)?;
                }
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The hook of "j" reaches left of its origin: the padded raster keeps
    /// ink left of the first glyph's origin (plotters' ttf cuts it off).
    #[test]
    fn j_keeps_its_hook() {
        let Some(r) = raster(&FontFamily::SansSerif, 40.0, "j") else {
            return; // no font on this machine: plotters' own text is used
        };
        let left_of_origin =
            (0..r.height).any(|y| (0..r.pad as usize).any(|x| r.pixels[y * r.width + x] > 0));
        assert!(left_of_origin, "no ink left of the origin of j");
        // And below the baseline (the descender).
        let em = 40.0 / 1.24;
        let base = r.pad as usize + (0.76 * em) as usize + 1;
        let below = (base..r.height).any(|y| (0..r.width).any(|x| r.pixels[y * r.width + x] > 0));
        assert!(below, "no descender");
    }
}
