//! `NAME.svg`: a figure drawn with plotters' SVG backend.
//!
//! Layout: title and chart on top, the legend in a strip of its own below the
//! chart (so it never covers data), wrapped into as many rows as it needs. Text
//! is emitted as SVG `<text>` in the generic `sans-serif` family; the viewer
//! picks the font, so no font file is read here.

use plotters::coord::combinators::{LogCoord, WithKeyPoints};
use plotters::coord::ranged1d::{AsRangedCoord, ValueFormatter};
use plotters::coord::Shift;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};

use crate::num::fmt_tick;
use crate::Figure;

const WIDTH: u32 = 960;
const CHART_HEIGHT: u32 = 560;
/// Left edge of the plotting area: margin plus y label area.
const Y_LABEL_AREA: u32 = 90;
const MARGIN: u32 = 16;
const LEGEND_FONT: f64 = 18.0;
const LEGEND_ROW: u32 = 28;
const LEGEND_SAMPLE: i32 = 36;
const MARKER: i32 = 7;

/// Series colours: first the Okabe–Ito colours, distinguishable with
/// colour-vision deficiency (less its yellow, faint on white), then four dark
/// ones for crowded figures; after ten they repeat.
const PALETTE: [RGBColor; 10] = [
    RGBColor(0, 114, 178),
    RGBColor(213, 94, 0),
    RGBColor(0, 158, 115),
    RGBColor(204, 121, 167),
    RGBColor(230, 159, 0),
    RGBColor(86, 180, 233),
    RGBColor(120, 120, 120),
    RGBColor(140, 86, 75),
    RGBColor(128, 128, 0),
    RGBColor(60, 40, 140),
];
/// Colour of published series that match no measured series by name.
const PUBLISHED_COLOUR: RGBColor = RGBColor(0, 0, 0);
const GREY: RGBColor = RGBColor(90, 90, 90);

/// Hollow marker outlines for published points, as pixel offsets of a closed
/// path around the point: triangle, square, diamond, inverted triangle.
fn marker(shape: usize) -> Vec<(i32, i32)> {
    let s = MARKER;
    match shape % 4 {
        0 => vec![(0, -s), (s, s * 3 / 4), (-s, s * 3 / 4), (0, -s)],
        1 => {
            let h = s * 3 / 4;
            vec![(-h, -h), (h, -h), (h, h), (-h, h), (-h, -h)]
        }
        2 => vec![(0, -s), (s, 0), (0, s), (-s, 0), (0, -s)],
        _ => vec![(0, s), (s, -s * 3 / 4), (-s, -s * 3 / 4), (0, s)],
    }
}

/// One legend entry.
struct Entry {
    label: String,
    colour: RGBColor,
    /// `None`: a measured series (line and dot); `Some(shape)`: published.
    marker: Option<usize>,
}

fn entries(fig: &Figure) -> Vec<Entry> {
    let mut out: Vec<Entry> = fig
        .series
        .iter()
        .enumerate()
        .map(|(i, s)| Entry {
            label: s.name.clone(),
            colour: PALETTE[i % PALETTE.len()],
            marker: None,
        })
        .collect();
    for (j, s) in fig.published.iter().enumerate() {
        out.push(Entry {
            label: format!("{} (published)", s.name),
            colour: published_colour(fig, j),
            marker: Some(j),
        });
    }
    out
}

fn published_colour(fig: &Figure, j: usize) -> RGBColor {
    let name = &fig.published[j].name;
    match fig.series.iter().position(|s| &s.name == name) {
        Some(i) => PALETTE[i % PALETTE.len()],
        None => PUBLISHED_COLOUR,
    }
}

/// An estimate of a label's width in pixels, from rough per-character widths
/// of common sans-serif fonts (SVG text is measured by the viewer, not here),
/// erring wide.
fn text_width(text: &str, font: f64) -> i32 {
    let ems: f64 = text
        .chars()
        .map(|c| match c {
            'i' | 'j' | 'l' | 'I' | '.' | ',' | ':' | ';' | '\'' | '|' | '!' => 0.3,
            ' ' | 'f' | 't' | 'r' | '(' | ')' | '[' | ']' | '-' | '/' => 0.4,
            'm' | 'w' | 'M' | 'W' | '%' | '@' => 0.9,
            c if c.is_ascii_uppercase() => 0.72,
            _ => 0.6,
        })
        .sum();
    // plotters writes font-size = size / 1.24.
    (ems * font / 1.24).ceil() as i32
}

/// Legend entries placed in rows: `(entry index, x offset)` per row.
fn legend_rows(entries: &[Entry]) -> Vec<Vec<(usize, i32)>> {
    let left = (MARGIN + Y_LABEL_AREA) as i32;
    let right = (WIDTH - MARGIN) as i32;
    let mut rows: Vec<Vec<(usize, i32)>> = Vec::new();
    let mut x = left;
    for (i, e) in entries.iter().enumerate() {
        let w = LEGEND_SAMPLE + 8 + text_width(&e.label, LEGEND_FONT) + 28;
        if rows.is_empty() || (x + w > right && x > left) {
            rows.push(Vec::new());
            x = left;
        }
        rows.last_mut().expect("a row was pushed").push((i, x));
        x += w;
    }
    rows
}

/// The axis span covering `values` with a little room, for a linear or a log
/// axis; a fixed span when there is nothing to show.
fn axis_range(values: impl Iterator<Item = f64>, log: bool) -> (f64, f64) {
    let (mut lo, mut hi) = (f64::INFINITY, f64::NEG_INFINITY);
    for v in values {
        lo = lo.min(v);
        hi = hi.max(v);
    }
    if lo > hi {
        return if log { (1.0, 10.0) } else { (0.0, 1.0) };
    }
    if log {
        let (l, h) = (lo.log10(), hi.log10());
        let pad = ((h - l) * 0.05).max(0.1);
        return (10f64.powf(l - pad), 10f64.powf(h + pad));
    }
    if lo == hi {
        let pad = if lo == 0.0 { 1.0 } else { lo.abs() * 0.1 };
        return (lo - pad, hi + pad);
    }
    let pad = (hi - lo) * 0.05;
    // Start at zero when the data is positive and not far from it.
    let lo = if lo >= 0.0 && lo <= 0.3 * hi {
        0.0
    } else {
        lo - pad
    };
    (lo, hi + pad)
}

/// A log axis over `lo..hi` (both > 0) with ticks at 1-2-5 multiples of
/// powers of ten where that gives a few per decade, finer on a short span,
/// sparser on a long one, and a faint line at every integer multiple.
fn log_axis(lo: f64, hi: f64) -> WithKeyPoints<LogCoord<f64>> {
    let decades = (hi / lo).log10();
    let steps: &[f64] = match decades {
        d if d < 1.2 => &[1.0, 1.5, 2.0, 3.0, 4.0, 5.0, 6.0, 8.0],
        d if d <= 3.5 => &[1.0, 2.0, 5.0],
        _ => &[1.0],
    };
    // Every `stride`-th power of ten when there are many decades.
    let stride = (decades / 8.0).ceil().max(1.0) as i32;
    let (first, last) = (lo.log10().floor() as i32, hi.log10().ceil() as i32);
    let mut bold = Vec::new();
    let mut light = Vec::new();
    for e in first..=last {
        let p = 10f64.powi(e);
        if e.rem_euclid(stride) == 0 {
            bold.extend(
                steps
                    .iter()
                    .map(|m| m * p)
                    .filter(|v| (lo..=hi).contains(v)),
            );
        }
        if decades <= 8.0 {
            light.extend(
                (1..10)
                    .map(|m| f64::from(m) * p)
                    .filter(|v| (lo..=hi).contains(v)),
            );
        }
    }
    (lo..hi)
        .log_scale()
        .with_key_points(bold)
        .with_light_points(light)
}

/// Renders `fig` as an SVG document.
pub(crate) fn render_svg(fig: &Figure) -> Result<String, String> {
    let entries = entries(fig);
    let rows = legend_rows(&entries);
    let skipped = fig.points_not_drawn();
    let caption_rows = u32::from(skipped > 0);
    let legend_height = (rows.len() as u32 + caption_rows) * LEGEND_ROW + MARGIN;
    let height = CHART_HEIGHT + legend_height;

    let drawable: Vec<(f64, f64)> = fig
        .series
        .iter()
        .chain(&fig.published)
        .flat_map(|s| s.points.iter().copied())
        .filter(|&p| fig.drawable(p))
        .collect();
    let (x0, x1) = axis_range(drawable.iter().map(|p| p.0), fig.log_x);
    let (y0, y1) = axis_range(drawable.iter().map(|p| p.1), fig.log_y);

    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, (WIDTH, height)).into_drawing_area();
        root.fill(&WHITE).map_err(|e| e.to_string())?;
        let (chart, legend) = root.split_vertically(CHART_HEIGHT);
        let empty = drawable.is_empty();
        let drawn = match (fig.log_x, fig.log_y) {
            (false, false) => draw_chart(&chart, fig, &entries, empty, x0..x1, y0..y1),
            (true, false) => draw_chart(&chart, fig, &entries, empty, log_axis(x0, x1), y0..y1),
            (false, true) => draw_chart(&chart, fig, &entries, empty, x0..x1, log_axis(y0, y1)),
            (true, true) => draw_chart(
                &chart,
                fig,
                &entries,
                empty,
                log_axis(x0, x1),
                log_axis(y0, y1),
            ),
        };
        drawn.map_err(|e| e.to_string())?;
        draw_legend(&legend, &entries, &rows, skipped, &fig.name).map_err(|e| e.to_string())?;
        root.present().map_err(|e| e.to_string())?;
    }
    Ok(svg)
}

type DrawResult<DB> = Result<(), DrawingAreaErrorKind<<DB as DrawingBackend>::ErrorType>>;

fn draw_chart<DB, X, Y>(
    area: &DrawingArea<DB, Shift>,
    fig: &Figure,
    entries: &[Entry],
    empty: bool,
    x: X,
    y: Y,
) -> DrawResult<DB>
where
    DB: DrawingBackend,
    X: AsRangedCoord<Value = f64>,
    Y: AsRangedCoord<Value = f64>,
    X::CoordDescType: ValueFormatter<f64>,
    Y::CoordDescType: ValueFormatter<f64>,
{
    // Shrink a long title to fit the width.
    let room = f64::from(WIDTH - 2 * MARGIN);
    let title_size =
        (26.0 * room / f64::from(text_width(&fig.title, 26.0).max(1))).clamp(12.0, 26.0);
    let mut chart = ChartBuilder::on(area)
        .caption(&fig.title, ("sans-serif", title_size))
        .margin(MARGIN)
        .x_label_area_size(64)
        .y_label_area_size(Y_LABEL_AREA)
        .build_cartesian_2d(x, y)?;
    chart
        .configure_mesh()
        .x_desc(fig.x_label.as_str())
        .y_desc(fig.y_label.as_str())
        .axis_desc_style(("sans-serif", 20))
        .label_style(("sans-serif", 17))
        .x_label_formatter(&|v| fmt_tick(*v))
        .y_label_formatter(&|v| fmt_tick(*v))
        .bold_line_style(BLACK.mix(0.15))
        .light_line_style(BLACK.mix(0.05))
        .draw()?;

    for (s, e) in fig.series.iter().zip(entries) {
        let colour = e.colour;
        // Break the line at points that cannot be drawn.
        for run in s.points.split(|&p| !fig.drawable(p)) {
            chart.draw_series(LineSeries::new(run.iter().copied(), colour.stroke_width(2)))?;
        }
        let dots = s.points.iter().copied().filter(|&p| fig.drawable(p));
        chart.draw_series(dots.map(|p| Circle::new(p, 3, colour.filled())))?;
    }
    for (s, e) in fig.published.iter().zip(&entries[fig.series.len()..]) {
        let shape = marker(e.marker.unwrap_or(0));
        let style = e.colour.stroke_width(2);
        let points = s.points.iter().copied().filter(|&p| fig.drawable(p));
        chart.draw_series(
            points.map(|p| EmptyElement::at(p) + PathElement::new(shape.clone(), style)),
        )?;
    }
    if empty {
        let plot = chart.plotting_area().strip_coord_spec();
        let (w, h) = plot.dim_in_pixel();
        let style = TextStyle::from(("sans-serif", 24).into_font())
            .color(&GREY)
            .pos(Pos::new(HPos::Center, VPos::Center));
        plot.draw(&Text::new("no data", (w as i32 / 2, h as i32 / 2), style))?;
    }
    Ok(())
}

fn draw_legend<DB: DrawingBackend>(
    area: &DrawingArea<DB, Shift>,
    entries: &[Entry],
    rows: &[Vec<(usize, i32)>],
    skipped: usize,
    name: &str,
) -> DrawResult<DB> {
    let text = TextStyle::from(("sans-serif", LEGEND_FONT).into_font())
        .color(&BLACK)
        .pos(Pos::new(HPos::Left, VPos::Center));
    let mut y = LEGEND_ROW as i32 / 2;
    for row in rows {
        for &(i, x) in row {
            let e = &entries[i];
            let mid = (x + LEGEND_SAMPLE / 2, y);
            match e.marker {
                None => {
                    area.draw(&PathElement::new(
                        vec![(x, y), (x + LEGEND_SAMPLE, y)],
                        e.colour.stroke_width(2),
                    ))?;
                    area.draw(&Circle::new(mid, 3, e.colour.filled()))?;
                }
                Some(shape) => {
                    area.draw(
                        &(EmptyElement::at(mid)
                            + PathElement::new(marker(shape), e.colour.stroke_width(2))),
                    )?;
                }
            }
            area.draw(&Text::new(
                e.label.as_str(),
                (x + LEGEND_SAMPLE + 8, y),
                text.clone(),
            ))?;
        }
        y += LEGEND_ROW as i32;
    }
    if skipped > 0 {
        let note = format!(
            "{skipped} point{} not drawn (NaN or infinite, or ≤ 0 on a log axis); {name}.csv has them",
            if skipped == 1 { "" } else { "s" }
        );
        let style = TextStyle::from(("sans-serif", 16).into_font())
            .color(&GREY)
            .pos(Pos::new(HPos::Left, VPos::Center));
        area.draw(&Text::new(note, ((MARGIN + Y_LABEL_AREA) as i32, y), style))?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ranges() {
        assert_eq!(axis_range([].into_iter(), false), (0.0, 1.0));
        assert_eq!(axis_range([].into_iter(), true), (1.0, 10.0));
        assert_eq!(axis_range([5.0].into_iter(), false), (4.5, 5.5));
        assert_eq!(axis_range([0.0].into_iter(), false), (-1.0, 1.0));
        // Positive data near zero starts at zero.
        assert_eq!(axis_range([10.0, 100.0].into_iter(), false), (0.0, 104.5));
        let (lo, hi) = axis_range([10.0, 1000.0].into_iter(), true);
        assert!(
            lo < 10.0 && lo > 5.0 && hi > 1000.0 && hi < 2000.0,
            "{lo} {hi}"
        );
        let (lo, hi) = axis_range([3.0].into_iter(), true);
        assert!(lo < 3.0 && hi > 3.0);
    }

    #[test]
    fn legend_wraps_long_entries() {
        let long = |i| Entry {
            label: format!("a rather long series name number {i}"),
            colour: BLACK,
            marker: None,
        };
        let entries: Vec<Entry> = (0..5).map(long).collect();
        let rows = legend_rows(&entries);
        assert!(rows.len() >= 3, "{}", rows.len());
        for row in &rows {
            let &(i, x) = row.last().unwrap();
            let end = x + LEGEND_SAMPLE + 8 + text_width(&entries[i].label, LEGEND_FONT);
            assert!(end <= (WIDTH - MARGIN) as i32 || row.len() == 1);
        }
    }
}
