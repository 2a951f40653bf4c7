//! Line charts as SVG: measured series drawn solid with their points, the
//! paper's values and ideal curves dashed, so that both read side by side.

use plotters::prelude::*;
use std::path::Path;

/// How a series is drawn.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Style {
    /// Measured here: a solid line with points.
    Measured,
    /// From the paper, or computed (an ideal curve): dashed.
    Reference,
}

/// One named line.
#[derive(Debug, Clone)]
pub struct Series {
    /// Its legend.
    pub name: String,
    /// (x, y) points, in x order.
    pub points: Vec<(f64, f64)>,
    /// How it is drawn.
    pub style: Style,
}

impl Series {
    /// A measured series.
    pub fn measured(name: impl Into<String>, points: Vec<(f64, f64)>) -> Series {
        Series {
            name: name.into(),
            points,
            style: Style::Measured,
        }
    }

    /// A reference (paper or ideal) series.
    pub fn reference(name: impl Into<String>, points: Vec<(f64, f64)>) -> Series {
        Series {
            name: name.into(),
            points,
            style: Style::Reference,
        }
    }
}

/// A chart: title, axes and series.
#[derive(Debug, Clone)]
pub struct Chart {
    /// The caption.
    pub title: String,
    /// The x axis' description.
    pub x_label: String,
    /// The y axis' description.
    pub y_label: String,
    /// A logarithmic x axis.
    pub log_x: bool,
    /// The lines.
    pub series: Vec<Series>,
}

const COLORS: [RGBColor; 6] = [
    RGBColor(0x1f, 0x77, 0xb4),
    RGBColor(0xd6, 0x27, 0x28),
    RGBColor(0x2c, 0xa0, 0x2c),
    RGBColor(0xff, 0x7f, 0x0e),
    RGBColor(0x94, 0x67, 0xbd),
    RGBColor(0x8c, 0x56, 0x4b),
];

fn io_err(e: impl std::fmt::Display) -> std::io::Error {
    std::io::Error::other(e.to_string())
}

/// Draws every series of `$chart` (a built plotters chart context).
macro_rules! draw_series {
    ($ctx:expr, $chart:expr) => {{
        for (i, s) in $chart.series.iter().enumerate() {
            let color = COLORS[i % COLORS.len()];
            let style = color.stroke_width(2);
            let pts: Vec<(f64, f64)> = s.points.clone();
            match s.style {
                Style::Measured => {
                    $ctx.draw_series(LineSeries::new(pts.clone(), style))
                        .map_err(io_err)?
                        .label(s.name.clone())
                        .legend(move |(x, y)| {
                            PathElement::new(vec![(x, y), (x + 20, y)], color.stroke_width(2))
                        });
                    $ctx.draw_series(pts.iter().map(|&p| Circle::new(p, 3, color.filled())))
                        .map_err(io_err)?;
                }
                Style::Reference => {
                    $ctx.draw_series(DashedLineSeries::new(pts, 6, 4, style))
                        .map_err(io_err)?
                        .label(s.name.clone())
                        .legend(move |(x, y)| {
                            PathElement::new(vec![(x, y), (x + 8, y)], color.stroke_width(2))
                        });
                }
            }
        }
        $ctx.configure_series_labels()
            .position(SeriesLabelPosition::UpperLeft)
            .background_style(WHITE.mix(0.9))
            .border_style(BLACK)
            .draw()
            .map_err(io_err)?;
    }};
}

impl Chart {
    /// The x and y ranges that hold every point, y from 0.
    fn bounds(&self) -> ((f64, f64), (f64, f64)) {
        let pts = || self.series.iter().flat_map(|s| s.points.iter());
        let (mut x0, mut x1) = pts().fold((f64::INFINITY, f64::NEG_INFINITY), |(a, b), p| {
            (a.min(p.0), b.max(p.0))
        });
        let y1 = pts().fold(0.0f64, |m, p| m.max(p.1));
        if !x0.is_finite() {
            (x0, x1) = (1.0, 2.0);
        }
        if x1 <= x0 {
            x1 = x0 + 1.0;
        }
        if self.log_x {
            x0 = x0.max(1e-9);
            x1 = x1.max(x0 * 2.0);
        }
        let y1 = if y1 > 0.0 { y1 * 1.15 } else { 1.0 };
        ((x0, x1), (0.0, y1))
    }

    /// Writes the chart to `path` as SVG.
    pub fn write_svg(&self, path: &Path) -> std::io::Result<()> {
        let root = SVGBackend::new(path, (820, 520)).into_drawing_area();
        root.fill(&WHITE).map_err(io_err)?;
        let ((x0, x1), (y0, y1)) = self.bounds();
        let mut builder = ChartBuilder::on(&root);
        builder
            .caption(&self.title, ("sans-serif", 18))
            .margin(20)
            .x_label_area_size(45)
            .y_label_area_size(65);
        if self.log_x {
            let mut ctx = builder
                .build_cartesian_2d((x0..x1).log_scale(), y0..y1)
                .map_err(io_err)?;
            ctx.configure_mesh()
                .x_desc(self.x_label.as_str())
                .y_desc(self.y_label.as_str())
                .draw()
                .map_err(io_err)?;
            draw_series!(ctx, self);
        } else {
            let mut ctx = builder.build_cartesian_2d(x0..x1, y0..y1).map_err(io_err)?;
            ctx.configure_mesh()
                .x_desc(self.x_label.as_str())
                .y_desc(self.y_label.as_str())
                .draw()
                .map_err(io_err)?;
            draw_series!(ctx, self);
        }
        root.present().map_err(io_err)?;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The contents of every `<text>` element, trimmed.
    fn texts(svg: &str) -> Vec<String> {
        svg.split("<text")
            .skip(1)
            .filter_map(|t| {
                let body = &t[t.find('>')? + 1..];
                Some(body[..body.find("</text>")?].trim().to_string())
            })
            .collect()
    }

    #[test]
    fn svg_has_both_series_and_the_axes() {
        let dir = std::env::temp_dir().join(format!("bricks-plot-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        for log_x in [false, true] {
            let chart = Chart {
                title: "t".into(),
                x_label: "routers".into(),
                y_label: "Mpps".into(),
                log_x,
                series: vec![
                    Series::measured("bricks", vec![(1.0, 3.0), (4.0, 2.5), (16.0, 2.0)]),
                    Series::reference("paper", vec![(1.0, 1.0), (16.0, 1.0)]),
                ],
            };
            let path = dir.join(format!("c{log_x}.svg"));
            chart.write_svg(&path).unwrap();
            let svg = std::fs::read_to_string(&path).unwrap();
            assert!(svg.starts_with("<svg"), "{}", &svg[..40]);
            let texts = texts(&svg);
            for t in ["routers", "Mpps", "bricks", "paper"] {
                assert!(texts.iter().any(|x| x == t), "no text {t} in {texts:?}");
            }
            assert!(svg.matches("<polyline").count() >= 2);
        }
        let _ = std::fs::remove_dir_all(&dir);
    }

    /// Whether `rsvg-convert` can be run; in CI it must be (scripts/setup
    /// installs librsvg2-bin).
    fn have_rsvg() -> bool {
        let ok = std::process::Command::new("rsvg-convert")
            .arg("--version")
            .output()
            .is_ok_and(|o| o.status.success());
        if !ok {
            assert!(
                std::env::var("CI").is_err(),
                "rsvg-convert is missing in CI (scripts/setup installs librsvg2-bin)"
            );
            eprintln!("skipped: rsvg-convert not found (apt-get install librsvg2-bin)");
        }
        ok
    }

    /// The chart drawn by a real SVG renderer, as a person would see it:
    /// both series' colours, the axes and the labels' ink are in the
    /// picture.
    #[test]
    fn a_renderer_draws_both_series_axes_and_labels() {
        if !have_rsvg() {
            return;
        }
        let dir = std::env::temp_dir().join(format!("bricks-render-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let chart = Chart {
            title: "aggregate rate against routers".into(),
            x_label: "virtual routers".into(),
            y_label: "Mpps".into(),
            log_x: true,
            series: vec![
                Series::measured("bricks", vec![(1.0, 3.0), (16.0, 2.5), (1024.0, 2.0)]),
                Series::reference("paper", vec![(1.0, 1.0), (1024.0, 0.8)]),
            ],
        };
        let svg = dir.join("c.svg");
        let png = dir.join("c.png");
        chart.write_svg(&svg).unwrap();
        let out = std::process::Command::new("rsvg-convert")
            .arg("-o")
            .arg(&png)
            .arg(&svg)
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let decoder =
            png::Decoder::new(std::io::BufReader::new(std::fs::File::open(&png).unwrap()));
        let mut reader = decoder.read_info().unwrap();
        let mut buf = vec![0; reader.output_buffer_size()];
        let info = reader.next_frame(&mut buf).unwrap();
        let px = info.color_type.samples();
        assert!(px >= 3, "{:?}", info.color_type);
        let (w, h) = (info.width as usize, info.height as usize);
        assert!(w >= 300 && h >= 200, "{w}x{h}");
        let near = |c: &[u8], rgb: RGBColor| {
            (c[0] as i32 - rgb.0 as i32).abs() < 40
                && (c[1] as i32 - rgb.1 as i32).abs() < 40
                && (c[2] as i32 - rgb.2 as i32).abs() < 40
        };
        let visible = |c: &[u8]| px < 4 || c[3] > 128;
        let pixels = || buf[..w * h * px].chunks(px).filter(|c| visible(c));
        for (n, colour) in COLORS[..2].iter().enumerate() {
            let count = pixels().filter(|c| near(c, *colour)).count();
            assert!(count > 50, "series {n}: {count} pixels of its colour");
        }
        // Axes, ticks and the labels' text: dark ink, in the left and
        // bottom margins.
        let dark = |x: usize, y: usize| {
            let c = &buf[(y * w + x) * px..][..px];
            visible(c) && c[0] < 100 && c[1] < 100 && c[2] < 100
        };
        let left = (0..h).filter(|&y| (0..w / 8).any(|x| dark(x, y))).count();
        let bottom = (0..w)
            .filter(|&x| (h - h / 8..h).any(|y| dark(x, y)))
            .count();
        assert!(left > 20, "little ink in the left margin: {left} rows");
        assert!(
            bottom > 20,
            "little ink in the bottom margin: {bottom} columns"
        );
        let _ = std::fs::remove_dir_all(&dir);
    }
}
