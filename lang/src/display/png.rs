//! RGB pixels as a PNG file (plots in notebooks, `:plot … > file.png`, the kernel's logo).

/// Encodes `width × height` RGB pixels (row by row, 3 bytes each) as PNG. A buffer of the
/// wrong length is padded with white or cut, never a panic.
pub fn encode_png(rgb: &[u8], width: u32, height: u32) -> Vec<u8> {
    encode_animated_png(&[rgb], width, height, 0)
}

/// Encodes frames of `width × height` RGB pixels as PNG: one frame is a plain PNG, several an
/// animated PNG (APNG, which browsers and notebooks play) showing each for `delay_ms`,
/// looping.
pub fn encode_animated_png(frames: &[&[u8]], width: u32, height: u32, delay_ms: u16) -> Vec<u8> {
    let n_bytes = width as usize * height as usize * 3;
    let mut res = Vec::new();
    let mut encoder = png::Encoder::new(&mut res, width, height);
    encoder.set_color(png::ColorType::Rgb);
    encoder.set_depth(png::BitDepth::Eight);
    let animated = frames.len() > 1;
    let written = (|| {
        if animated {
            encoder.set_animated(frames.len() as u32, 0)?;
            encoder.set_frame_delay(delay_ms, 1000)?;
        }
        let mut writer = encoder.write_header()?;
        for rgb in frames {
            let mut pixels = rgb[..rgb.len().min(n_bytes)].to_vec();
            pixels.resize(n_bytes, 255);
            writer.write_image_data(&pixels)?;
        }
        writer.finish()
    })();
    if written.is_err() {
        // Only a zero-sized image fails; an empty file says "no image" as well as anything.
        res.clear();
    }
    res
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn encodes_and_decodes() {
        let rgb = [255, 0, 0, 0, 255, 0];
        let bytes = encode_png(&rgb, 2, 1);
        let decoder = png::Decoder::new(std::io::Cursor::new(bytes));
        let mut reader = decoder.read_info().expect("a PNG header");
        let mut buf = vec![0; reader.output_buffer_size().expect("a small image")];
        let info = reader.next_frame(&mut buf).expect("one frame");
        assert_eq!((info.width, info.height), (2, 1));
        assert_eq!(&buf[..6], &rgb);
        assert!(encode_png(&[], 0, 0).is_empty());
    }
}
