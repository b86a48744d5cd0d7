//! `NAME.csv`: the figure's data in long format, header `series,source,x,y`.

use std::path::Path;

use serde::Serialize;

use crate::{Figure, ReportError};

#[derive(Serialize)]
struct Row<'a> {
    series: &'a str,
    /// `measured` or `published`.
    source: &'static str,
    x: f64,
    y: f64,
}

/// Writes every point of `fig`, measured series first, in the order given.
/// Non-finite values are written as `NaN`, `inf`, `-inf`.
pub(crate) fn write_csv(fig: &Figure, path: &Path) -> Result<(), ReportError> {
    let err = |e: csv::Error| ReportError::write(path, e);
    // The header is written by hand so that a figure with no points still has
    // one (serialize writes it only with a first row).
    let mut w = csv::WriterBuilder::new()
        .has_headers(false)
        .from_path(path)
        .map_err(err)?;
    w.write_record(["series", "source", "x", "y"])
        .map_err(err)?;
    let sources = [("measured", &fig.series), ("published", &fig.published)];
    for (source, list) in sources {
        for s in list {
            for &(x, y) in &s.points {
                w.serialize(Row {
                    series: &s.name,
                    source,
                    x,
                    y,
                })
                .map_err(err)?;
            }
        }
    }
    w.flush().map_err(|e| ReportError::write(path, e))
}
