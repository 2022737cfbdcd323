//! PNG charts of QPS, TPS, p99 latency and proxy CPU against threads: one panel per
//! (topology, workload), one line per target.

use std::path::Path;

use ab_glyph::FontArc;
use plotters::prelude::*;

use crate::error::{BenchError, Result};
use crate::record::RunRecord;
use crate::report::{sections, targets};
use crate::text_backend::TextBitmap;

/// The four charts: file stem, axis label, and the figure taken from a record.
pub struct Metric {
    pub file: &'static str,
    pub label: &'static str,
    pub value: fn(&RunRecord) -> Option<f64>,
}

pub const METRICS: [Metric; 4] = [
    Metric {
        file: "qps",
        label: "queries per second",
        value: |r| Some(r.stats.qps),
    },
    Metric {
        file: "tps",
        label: "transactions per second",
        value: |r| Some(r.stats.tps),
    },
    Metric {
        file: "p99",
        label: "p99 latency (ms)",
        value: |r| Some(r.stats.p99_ms),
    },
    Metric {
        file: "cpu",
        label: "proxy CPU, max % of one core",
        value: |r| r.cpu.map(|c| c.max_pct),
    },
];

const PANEL: (u32, u32) = (640, 420);
const COLUMNS: usize = 3;

/// One line of a panel: a target's points, as (threads, value).
#[derive(Debug, Clone, PartialEq)]
pub struct Series {
    pub target: String,
    pub points: Vec<(u32, f64)>,
}

/// The lines of the panel for `topology`/`workload`: targets with at least one value.
pub fn panel_series(records: &[RunRecord], topology: &str, workload: &str, metric: &Metric) -> Vec<Series> {
    targets(records)
        .into_iter()
        .map(|target| {
            let mut points: Vec<(u32, f64)> = records
                .iter()
                .filter(|r| r.topology == topology && r.workload == workload && r.target == target)
                .filter_map(|r| (metric.value)(r).map(|v| (r.threads, v)))
                .collect();
            points.sort_by_key(|p| p.0);
            Series { target, points }
        })
        .filter(|s| !s.points.is_empty())
        .collect()
}

/// Writes `qps.png`, `tps.png`, `p99.png` and `cpu.png` into `dir`; returns their file names.
pub fn write_all(dir: &Path, records: &[RunRecord], font: &FontArc) -> Result<Vec<String>> {
    let mut files = Vec::new();
    if records.is_empty() {
        return Ok(files);
    }
    let all_targets = targets(records);
    for metric in &METRICS {
        let name = format!("{}.png", metric.file);
        let path = dir.join(&name);
        draw_metric(&path, records, metric, &all_targets, font).map_err(|why| BenchError::Chart {
            path: path.clone(),
            why,
        })?;
        files.push(name);
    }
    Ok(files)
}

fn draw_metric(
    path: &Path,
    records: &[RunRecord],
    metric: &Metric,
    all_targets: &[String],
    font: &FontArc,
) -> std::result::Result<(), String> {
    let panels = sections(records);
    let cols = panels.len().clamp(1, COLUMNS);
    let rows = panels.len().div_ceil(cols);
    let size = (PANEL.0 * cols as u32, PANEL.1 * rows as u32);
    let root = TextBitmap::new(path, size, font.clone()).into_drawing_area();
    root.fill(&WHITE).map_err(|e| e.to_string())?;
    for (area, (topology, workload)) in root.split_evenly((rows, cols)).iter().zip(&panels) {
        let series = panel_series(records, topology, workload, metric);
        let caption = format!("{workload} ({topology}): {}", metric.file.to_uppercase());
        draw_panel(area, &caption, metric.label, &series, all_targets).map_err(|e| e.to_string())?;
    }
    root.present().map_err(|e| e.to_string())
}

/// A colour per target that stays the same across charts.
fn colour(all_targets: &[String], target: &str) -> RGBColor {
    const FIXED: [RGBColor; 6] = [
        RGBColor(31, 119, 180),
        RGBColor(214, 39, 40),
        RGBColor(44, 160, 44),
        RGBColor(255, 127, 14),
        RGBColor(148, 103, 189),
        RGBColor(140, 86, 75),
    ];
    let i = all_targets.iter().position(|t| t == target).unwrap_or(0);
    FIXED[i % FIXED.len()]
}

type Area<'a> = DrawingArea<TextBitmap<'a>, plotters::coord::Shift>;

fn draw_panel(
    area: &Area,
    caption: &str,
    y_label: &str,
    series: &[Series],
    all_targets: &[String],
) -> std::result::Result<(), Box<dyn std::error::Error + 'static>> {
    let threads: Vec<u32> = {
        let mut t: Vec<u32> = series.iter().flat_map(|s| s.points.iter().map(|p| p.0)).collect();
        t.sort_unstable();
        t.dedup();
        t
    };
    // Thread counts are evenly spaced (they usually double), labelled with their values.
    let index = |t: u32| threads.iter().position(|&x| x == t).unwrap_or(0) as i32;
    let y_max = series
        .iter()
        .flat_map(|s| s.points.iter().map(|p| p.1))
        .fold(0.0, f64::max);
    let y_top = if y_max > 0.0 { y_max * 1.15 } else { 1.0 };
    let x_range = -1i32..threads.len() as i32;
    let x_label = |i: &i32| {
        usize::try_from(*i)
            .ok()
            .and_then(|i| threads.get(i))
            .map_or(String::new(), u32::to_string)
    };
    let mut chart = ChartBuilder::on(area)
        .caption(caption, ("sans-serif", 20))
        .margin(12)
        .x_label_area_size(40)
        .y_label_area_size(70)
        .build_cartesian_2d(x_range, 0.0..y_top)?;
    chart
        .configure_mesh()
        .x_desc("client threads")
        .y_desc(y_label)
        .x_labels(threads.len() + 2)
        .x_label_formatter(&x_label)
        .y_label_formatter(&|y| short_number(*y))
        .label_style(("sans-serif", 14))
        .axis_desc_style(("sans-serif", 15))
        .draw()?;
    for s in series {
        let c = colour(all_targets, &s.target);
        let pts: Vec<(i32, f64)> = s.points.iter().map(|&(t, v)| (index(t), v)).collect();
        chart
            .draw_series(LineSeries::new(pts.clone(), c.stroke_width(2)))?
            .label(s.target.as_str())
            .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], c.stroke_width(3)));
        chart.draw_series(pts.into_iter().map(|p| Circle::new(p, 4, c.filled())))?;
    }
    if series.is_empty() {
        let (w, h) = area.dim_in_pixel();
        area.draw_text(
            "no data (no proxy with a known pid)",
            &("sans-serif", 16).into_text_style(area),
            (w as i32 / 4, h as i32 / 2),
        )?;
    } else {
        chart
            .configure_series_labels()
            .position(SeriesLabelPosition::UpperLeft)
            .background_style(WHITE.mix(0.85))
            .border_style(BLACK)
            .label_font(("sans-serif", 14))
            .draw()?;
    }
    Ok(())
}

/// `12345.0` -> `"12.3k"`, `2.5` -> `"2.5"`.
pub fn short_number(v: f64) -> String {
    if v.abs() >= 1_000_000.0 {
        format!("{:.1}M", v / 1_000_000.0)
    } else if v.abs() >= 1000.0 {
        format!("{:.1}k", v / 1000.0)
    } else if v.fract() == 0.0 {
        format!("{v:.0}")
    } else {
        format!("{v:.1}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The shared sample, thread counts out of order.
    fn sample() -> Vec<RunRecord> {
        let mut records = crate::record::tests::sample();
        records.swap(0, 2);
        records.swap(1, 3);
        records
    }

    #[test]
    fn series_are_per_target_sorted_by_threads() {
        let s = panel_series(&sample(), "single", "oltp_point_select", &METRICS[0]);
        assert_eq!(s.len(), 2);
        assert_eq!(s[0].target, "direct");
        assert_eq!(s[0].points, vec![(4, 1000.0), (16, 4000.0)]);
        // CPU: only the proxy has figures.
        let cpu = panel_series(&sample(), "single", "oltp_point_select", &METRICS[3]);
        assert_eq!(cpu.len(), 1);
        assert_eq!(cpu[0].points, vec![(4, 95.0), (16, 95.0)]);
    }

    #[test]
    fn numbers_are_short_on_the_axis() {
        assert_eq!(short_number(12345.0), "12.3k");
        assert_eq!(short_number(2_500_000.0), "2.5M");
        assert_eq!(short_number(40.0), "40");
        assert_eq!(short_number(2.5), "2.5");
    }

    #[test]
    fn four_png_files_are_written() {
        let font = crate::text_backend::load_font().expect("a font (scripts/install-deps.sh installs one)");
        let dir = std::env::temp_dir().join(format!("tessera-bench-charts-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let files = write_all(&dir, &sample(), &font).unwrap();
        assert_eq!(files, ["qps.png", "tps.png", "p99.png", "cpu.png"]);
        for f in &files {
            let bytes = std::fs::read(dir.join(f)).unwrap();
            assert_eq!(&bytes[1..4], b"PNG", "{f}");
            assert!(bytes.len() > 5000, "{f} is suspiciously small: {}", bytes.len());
        }
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
