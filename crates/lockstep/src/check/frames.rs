//! Image observations that differ, as pictures: both frames and a mask of the pixels that
//! differ, PNG-encoded for report.html. "Element 40113 (uint8): 255, 254" says nothing about a
//! screenshot; a blinking caret or a focus ring is obvious in the mask.
//!
//! An observation is taken for an image when it is `uint8` of shape `[H, W]` or `[H, W, C]`
//! with `C` in 1, 3, 4 and both sides at least [`SIDE_MIN`] pixels (what Gymnasium's pixel
//! observations and BrowserGym's screenshots are). The PNGs are written by the `png` crate
//! with fixed settings, so the same frames always give the same bytes (reports are compared
//! byte for byte).

use base64::Engine as _;

/// Smallest height and width taken for an image (smaller `uint8` grids are data, not pictures).
pub const SIDE_MIN: usize = 8;
/// Frames larger than this (in pixels) are described but not embedded: a report stays openable.
pub const EMBED_PIXELS_MAX: usize = 1 << 21;

/// Where two frames of the same shape differ.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FrameDiff {
    pub differing_pixels: u64,
    pub pixels: u64,
    /// Rows `top..bottom` and columns `left..right` that hold every differing pixel.
    pub bbox: [u64; 4],
    /// Both frames and the mask (white where a pixel differs), base64 PNG; `None` past
    /// [`EMBED_PIXELS_MAX`].
    pub pngs: Option<[String; 3]>,
}

/// The image layout of `shape`: `(height, width, channels)`, `None` when it is not an image.
pub fn image_layout(shape: &[usize]) -> Option<(usize, usize, usize)> {
    let (h, w, c) = match *shape {
        [h, w] => (h, w, 1),
        [h, w, c] if matches!(c, 1 | 3 | 4) => (h, w, c),
        _ => return None,
    };
    (h >= SIDE_MIN && w >= SIDE_MIN).then_some((h, w, c))
}

/// Where `a` and `b` (row-major `uint8` frames of `shape`) differ, `None` when they do not or
/// `shape` is not an image.
pub fn frame_diff(shape: &[usize], a: &[u8], b: &[u8]) -> Option<FrameDiff> {
    let (h, w, c) = image_layout(shape)?;
    if a.len() != h * w * c || b.len() != a.len() {
        return None;
    }
    let mut mask = vec![0u8; h * w];
    let (mut top, mut left, mut bottom, mut right) = (h, w, 0, 0);
    let mut differing = 0u64;
    for (p, (x, y)) in a.chunks_exact(c).zip(b.chunks_exact(c)).enumerate() {
        if x != y {
            mask[p] = 255;
            differing += 1;
            let (row, col) = (p / w, p % w);
            top = top.min(row);
            bottom = bottom.max(row + 1);
            left = left.min(col);
            right = right.max(col + 1);
        }
    }
    if differing == 0 {
        return None;
    }
    let pngs = (h * w <= EMBED_PIXELS_MAX).then(|| {
        [
            png_base64(w, h, c, a),
            png_base64(w, h, c, b),
            png_base64(w, h, 1, &mask),
        ]
    });
    Some(FrameDiff {
        differing_pixels: differing,
        pixels: (h * w) as u64,
        bbox: [top as u64, left as u64, bottom as u64, right as u64],
        pngs,
    })
}

/// One frame as base64 PNG (empty on an encoder error, which fixed sizes do not give).
fn png_base64(width: usize, height: usize, channels: usize, data: &[u8]) -> String {
    let mut out = Vec::new();
    {
        let mut encoder = png::Encoder::new(&mut out, width as u32, height as u32);
        encoder.set_color(match channels {
            3 => png::ColorType::Rgb,
            4 => png::ColorType::Rgba,
            _ => png::ColorType::Grayscale,
        });
        encoder.set_depth(png::BitDepth::Eight);
        encoder.set_compression(png::Compression::Default);
        encoder.set_filter(png::FilterType::Paeth);
        let written = encoder
            .write_header()
            .and_then(|mut writer| writer.write_image_data(data));
        if written.is_err() {
            return String::new();
        }
    }
    base64::engine::general_purpose::STANDARD.encode(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn images_are_uint8_grids_of_pictures() {
        assert_eq!(image_layout(&[210, 160, 3]), Some((210, 160, 3)));
        assert_eq!(image_layout(&[64, 64]), Some((64, 64, 1)));
        assert_eq!(image_layout(&[64, 64, 2]), None);
        assert_eq!(image_layout(&[4, 64, 3]), None);
        assert_eq!(image_layout(&[4096]), None);
    }

    #[test]
    fn the_mask_covers_the_differing_pixels() {
        let shape = [8, 10, 3];
        let a = vec![7u8; 8 * 10 * 3];
        let mut b = a.clone();
        b[(2 * 10 + 3) * 3 + 1] = 9; // pixel (2, 3), green
        b[(5 * 10 + 8) * 3] = 0; // pixel (5, 8), red
        let d = frame_diff(&shape, &a, &b).unwrap();
        assert_eq!((d.differing_pixels, d.pixels), (2, 80));
        assert_eq!(d.bbox, [2, 3, 6, 9]);
        let [left, right, mask] = d.pngs.clone().unwrap();
        let decode = |s: &str| base64::engine::general_purpose::STANDARD.decode(s).unwrap();
        assert!(decode(&left).starts_with(b"\x89PNG"));
        assert_ne!(left, right);
        let png = decode(&mask);
        let mut reader = png::Decoder::new(png.as_slice()).read_info().unwrap();
        let mut pixels = vec![0; reader.output_buffer_size()];
        reader.next_frame(&mut pixels).unwrap();
        let white: Vec<usize> = (0..80).filter(|&p| pixels[p] == 255).collect();
        assert_eq!(white, [23, 58]);
        assert_eq!(frame_diff(&shape, &a, &a), None);
        assert_eq!(
            frame_diff(&shape, &a, &b),
            Some(d),
            "same frames, same bytes"
        );
    }
}
