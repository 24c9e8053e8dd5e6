//! Helpers to inspect rendered SVG and PNG output.

use pep_plot::{Rgb, PALETTE};

pub fn hex(c: Rgb) -> String {
    format!("#{:02X}{:02X}{:02X}", c.0, c.1, c.2)
}

/// A parsed SVG: the elements we count, by tag.
pub struct Svg {
    pub width: u32,
    pub height: u32,
    /// (tag, stroke, fill, points/coords attribute) of every element.
    pub elements: Vec<Elem>,
    /// Trimmed content of every `<text>`, with its x, y and anchor.
    pub texts: Vec<TextEl>,
}

pub struct Elem {
    pub tag: String,
    pub stroke: Option<String>,
    pub fill: Option<String>,
    pub points: Option<String>,
}

pub struct TextEl {
    pub text: String,
    pub x: f64,
    pub y: f64,
    pub anchor: String,
    pub rotated: bool,
}

pub fn parse_svg(svg: &str) -> Svg {
    let doc = roxmltree::Document::parse(svg).expect("SVG is well-formed XML");
    let root = doc.root_element();
    assert_eq!(root.tag_name().name(), "svg");
    let num = |n: &roxmltree::Node, a: &str| n.attribute(a).unwrap().parse::<f64>().unwrap();
    let mut elements = Vec::new();
    let mut texts = Vec::new();
    for n in root.descendants().filter(|n| n.is_element()) {
        let tag = n.tag_name().name().to_string();
        if tag == "text" {
            texts.push(TextEl {
                text: n.text().unwrap_or("").trim().to_string(),
                x: num(&n, "x"),
                y: num(&n, "y"),
                anchor: n.attribute("text-anchor").unwrap_or("").to_string(),
                rotated: n.attribute("transform").is_some(),
            });
        }
        elements.push(Elem {
            tag,
            stroke: n.attribute("stroke").map(str::to_string),
            fill: n.attribute("fill").map(str::to_string),
            points: n.attribute("points").map(str::to_string),
        });
    }
    Svg {
        width: num(&root, "width") as u32,
        height: num(&root, "height") as u32,
        elements,
        texts,
    }
}

impl Svg {
    /// Elements with this tag whose stroke is the `i`-th palette colour.
    pub fn stroked(&self, tag: &str, i: usize) -> Vec<&Elem> {
        let c = hex(PALETTE[i]);
        self.elements
            .iter()
            .filter(|e| e.tag == tag && e.stroke.as_deref() == Some(&c))
            .collect()
    }
    /// Elements with this tag whose fill is the `i`-th palette colour.
    pub fn filled(&self, tag: &str, i: usize) -> Vec<&Elem> {
        let c = hex(PALETTE[i]);
        self.elements
            .iter()
            .filter(|e| e.tag == tag && e.fill.as_deref() == Some(&c))
            .collect()
    }
    /// Polylines drawn in any palette colour: the data lines.
    pub fn data_polylines(&self) -> usize {
        (0..PALETTE.len())
            .map(|i| self.stroked("polyline", i).len())
            .sum()
    }
    pub fn has_text(&self, s: &str) -> bool {
        self.texts.iter().any(|t| t.text == s)
    }
}

/// Number of points in a `points` attribute.
pub fn point_count(e: &Elem) -> usize {
    e.points.as_deref().unwrap_or("").split_whitespace().count()
}

/// Decoded PNG: size and RGB pixels. Checks the signature first.
pub struct Png {
    pub width: u32,
    pub height: u32,
    pub rgb: Vec<u8>,
}

pub fn decode_png(bytes: &[u8]) -> Png {
    assert_eq!(&bytes[..8], b"\x89PNG\r\n\x1a\n", "PNG signature");
    let dec = png::Decoder::new(std::io::Cursor::new(bytes));
    let mut reader = dec.read_info().expect("PNG header");
    let mut buf = vec![0; reader.output_buffer_size().expect("size")];
    let info = reader.next_frame(&mut buf).expect("PNG frame");
    assert_eq!(info.color_type, png::ColorType::Rgb);
    buf.truncate(info.buffer_size());
    Png {
        width: info.width,
        height: info.height,
        rgb: buf,
    }
}

impl Png {
    /// Pixels exactly of colour `c`.
    pub fn count(&self, c: Rgb) -> usize {
        self.rgb
            .chunks_exact(3)
            .filter(|p| p == &[c.0, c.1, c.2])
            .count()
    }
}
