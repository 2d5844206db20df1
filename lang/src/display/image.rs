//! Images (`:html imshow img`, `:html matshow m`): RGB pixels shown as a PNG in a notebook,
//! and as text in a terminal (half-block characters in 24-bit colour) and in the `>` lines of
//! literate files (a grey ramp: the same text for the same pixels). A sequence of images
//! (`:html imseqshow imgs`) is an animated PNG in a notebook and its last frame as text.

use super::png::encode_animated_png;

/// An image, row by row, 3 bytes (red, green, blue) per pixel; or several of the same size,
/// the frames of an animation, one after the other.
#[derive(Clone, Debug, PartialEq)]
pub struct Image {
    pub width: usize,
    pub height: usize,
    pub frames: usize,
    pub rgb: Vec<u8>,
    /// How long an animation shows each frame.
    pub frame_ms: u16,
}

/// How long an animation shows each frame unless it says (Dex's `imseqshow`: half a second).
const FRAME_MS: u16 = 500;

/// A small image is enlarged (each pixel a square block) until its longer side has at least
/// this many pixels, so that a 28 × 28 digit can be seen in a notebook.
const MIN_SIDE: usize = 256;

/// The text forms are at most this many characters wide (and half as many lines high).
const TEXT_COLUMNS: usize = 64;

/// Grey levels of the plain text form, dark to light.
const RAMP: [char; 10] = [' ', '.', ':', '-', '=', '+', '*', '#', '%', '@'];

impl Image {
    /// An image from values in [0, 1] (clipped; NaN is black), as Dex's `float_to_8bit`
    /// truncates: `floor (255 · x)`.
    pub fn from_unit_floats(width: usize, height: usize, values: &[f64]) -> Image {
        let frames = (values.len() / (3 * width * height).max(1)).max(1);
        let rgb = values
            .iter()
            .map(|&value| {
                let value = if value.is_nan() { 0.0 } else { value };
                (255.0 * value.clamp(0.0, 1.0)) as u8
            })
            .collect();
        Image {
            width,
            height,
            frames,
            rgb,
            frame_ms: FRAME_MS,
        }
    }

    /// The animation showing each frame for `frame_ms` milliseconds.
    pub fn with_frame_delay(self, frame_ms: u16) -> Image {
        Image { frame_ms, ..self }
    }

    /// The image as a PNG file (an animated one for several frames), enlarged by a whole
    /// factor when it is small.
    pub fn to_png(&self) -> Vec<u8> {
        let factor = self.enlargement();
        let (width, height) = (self.width * factor, self.height * factor);
        let frames: Vec<Vec<u8>> = (0..self.frames)
            .map(|frame| {
                let mut pixels = Vec::with_capacity(width * height * 3);
                for row in 0..height {
                    for column in 0..width {
                        pixels.extend_from_slice(&self.pixel(frame, row / factor, column / factor));
                    }
                }
                pixels
            })
            .collect();
        let frames: Vec<&[u8]> = frames.iter().map(Vec::as_slice).collect();
        encode_animated_png(&frames, width as u32, height as u32, self.frame_ms)
    }

    /// The whole factor a small image is enlarged by in its PNG.
    fn enlargement(&self) -> usize {
        let side = self.width.max(self.height).max(1);
        MIN_SIDE.div_ceil(side).max(1)
    }

    fn pixel(&self, frame: usize, row: usize, column: usize) -> [u8; 3] {
        let at = ((frame * self.height + row) * self.width + column) * 3;
        match self.rgb.get(at..at + 3) {
            Some(&[r, g, b]) => [r, g, b],
            _ => [255, 255, 255],
        }
    }

    /// The pixel of the last frame nearest the centre of text cell (`row`, `column`) of a
    /// `rows × columns` grid.
    fn sample(&self, row: usize, column: usize, rows: usize, columns: usize) -> [u8; 3] {
        let y = ((2 * row + 1) * self.height / (2 * rows)).min(self.height.saturating_sub(1));
        let x = ((2 * column + 1) * self.width / (2 * columns)).min(self.width.saturating_sub(1));
        self.pixel(self.frames - 1, y, x)
    }

    /// The line under a text form: the size, and the number of frames of an animation.
    fn caption(&self) -> String {
        match self.frames {
            1 => format!("{}×{} image", self.height, self.width),
            frames => format!(
                "{frames} frames of {}×{} images, the last shown",
                self.height, self.width
            ),
        }
    }

    /// The text grid's size: at most `TEXT_COLUMNS` wide, keeping the aspect ratio with
    /// characters twice as high as wide.
    fn text_size(&self) -> (usize, usize) {
        let columns = self.width.clamp(1, TEXT_COLUMNS);
        let rows = (self.height * columns)
            .div_ceil(2 * self.width.max(1))
            .max(1);
        (rows, columns)
    }

    /// The image as plain text: one character per cell from a grey ramp, and its size.
    pub fn to_text(&self) -> String {
        let (rows, columns) = self.text_size();
        let mut out = Vec::with_capacity(rows + 1);
        for row in 0..rows {
            let line: String = (0..columns)
                .map(|column| {
                    let [r, g, b] = self.sample(row, column, rows, columns);
                    let grey =
                        (299 * u32::from(r) + 587 * u32::from(g) + 114 * u32::from(b)) / 1000;
                    RAMP[(grey as usize * RAMP.len() / 256).min(RAMP.len() - 1)]
                })
                .collect();
            out.push(format!("│{line}│"));
        }
        out.push(self.caption());
        out.join("\n")
    }

    /// The image in a terminal: each character is two pixels (`▀`: the upper one its
    /// foreground, the lower one its background) in 24-bit colour.
    pub fn to_ansi(&self) -> String {
        let (rows, columns) = self.text_size();
        let mut out = Vec::with_capacity(rows + 1);
        for row in 0..rows {
            let mut line = String::new();
            for column in 0..columns {
                let [r, g, b] = self.sample(2 * row, column, 2 * rows, columns);
                let [r2, g2, b2] = self.sample(2 * row + 1, column, 2 * rows, columns);
                line.push_str(&format!("\x1b[38;2;{r};{g};{b}m\x1b[48;2;{r2};{g2};{b2}m▀"));
            }
            line.push_str("\x1b[0m");
            out.push(line);
        }
        out.push(self.caption());
        out.join("\n")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn decode(bytes: &[u8]) -> (u32, u32, Vec<u8>) {
        let decoder = png::Decoder::new(std::io::Cursor::new(bytes.to_vec()));
        let mut reader = decoder.read_info().expect("a PNG header");
        let mut buf = vec![0; reader.output_buffer_size().expect("a small image")];
        let info = reader.next_frame(&mut buf).expect("one frame");
        buf.truncate(info.buffer_size());
        (info.width, info.height, buf)
    }

    #[test]
    fn small_images_are_enlarged_by_whole_pixels() {
        // 2 × 1: red, then blue.
        let image = Image::from_unit_floats(2, 1, &[1.0, 0.0, 0.0, 0.0, 0.0, 1.0]);
        let (width, height, pixels) = decode(&image.to_png());
        assert_eq!((width, height), (256, 128));
        assert_eq!(&pixels[..3], &[255, 0, 0]);
        let last = pixels.len() - 3;
        assert_eq!(&pixels[last..], &[0, 0, 255]);
    }

    #[test]
    fn frames_are_an_animated_png_and_the_last_is_the_text() {
        // Two 1 × 1 frames: black, then white.
        let image = Image::from_unit_floats(1, 1, &[0.0, 0.0, 0.0, 1.0, 1.0, 1.0]);
        assert_eq!(image.frames, 2);
        let bytes = image.to_png();
        let decoder = png::Decoder::new(std::io::Cursor::new(bytes));
        let mut reader = decoder.read_info().expect("a PNG header");
        let control = reader.info().animation_control.expect("an animated PNG");
        assert_eq!((control.num_frames, control.num_plays), (2, 0));
        let mut buf = vec![0; reader.output_buffer_size().expect("a small image")];
        let mut firsts = Vec::new();
        for _ in 0..2 {
            reader.next_frame(&mut buf).expect("a frame");
            firsts.push(buf[0]);
        }
        assert_eq!(firsts, vec![0, 255]);
        let delay = reader.info().frame_control.expect("a frame's control");
        assert_eq!(
            f64::from(delay.delay_num) / f64::from(delay.delay_den),
            f64::from(FRAME_MS) / 1000.0
        );
        let text = image.to_text();
        assert_eq!(
            text.lines().collect::<Vec<_>>(),
            vec!["│@│", "2 frames of 1×1 images, the last shown"]
        );
    }

    #[test]
    fn an_animation_shows_each_frame_for_its_delay() {
        let image =
            Image::from_unit_floats(1, 1, &[0.0, 0.0, 0.0, 1.0, 1.0, 1.0]).with_frame_delay(40);
        let decoder = png::Decoder::new(std::io::Cursor::new(image.to_png()));
        let mut reader = decoder.read_info().expect("a PNG header");
        let mut buf = vec![0; reader.output_buffer_size().expect("a small image")];
        reader.next_frame(&mut buf).expect("a frame");
        let delay = reader.info().frame_control.expect("a frame's control");
        assert_eq!(
            f64::from(delay.delay_num) / f64::from(delay.delay_den),
            0.04
        );
    }

    #[test]
    fn values_are_clipped_and_truncated_as_dex_does() {
        let image = Image::from_unit_floats(1, 1, &[1.5, -0.2, 0.5]);
        assert_eq!(image.rgb, vec![255, 0, 127]);
    }

    #[test]
    fn text_forms_follow_the_brightness() {
        // A dark pixel above a light one: a 1-column image of 2 rows.
        let image = Image::from_unit_floats(
            1,
            4,
            &[0.0; 6]
                .iter()
                .chain(&[1.0; 6])
                .copied()
                .collect::<Vec<_>>(),
        );
        let text = image.to_text();
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines, vec!["│ │", "│@│", "4×1 image"]);
        assert!(image
            .to_ansi()
            .contains("\x1b[38;2;0;0;0m\x1b[48;2;0;0;0m▀"));
    }
}
