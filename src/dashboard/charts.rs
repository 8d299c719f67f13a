//! Line charts drawn on the server as SVG: no script, no external file, every text
//! escaped. Colours come from the stylesheet through each series' class.

use std::fmt::Write as _;

/// Width and height of the drawing, in its own units (it scales to the page).
const WIDTH: f64 = 560.0;
const HEIGHT: f64 = 210.0;
/// Room for the axis labels.
const LEFT: f64 = 56.0;
const BOTTOM: f64 = 28.0;
const TOP: f64 = 12.0;
const RIGHT: f64 = 12.0;

/// One line.
#[derive(Debug, Clone)]
pub struct Series {
    /// Its name, in the legend.
    pub name: &'static str,
    /// Its CSS class (`s-sent`, ...), which gives its colour.
    pub class: &'static str,
    /// One value per label.
    pub values: Vec<f64>,
}

/// A horizontal line not to cross, such as a 4 % bounce rate.
#[derive(Debug, Clone, Copy)]
pub struct Threshold {
    /// Its value.
    pub value: f64,
    /// What it says.
    pub label: &'static str,
}

fn escape(text: &str) -> String {
    text.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

/// A top for the y axis at or above `max` whose quarters are round numbers (whole ones
/// when `whole`).
fn nice(max: f64, whole: bool) -> f64 {
    let quarter = max / 4.0;
    if quarter <= 0.0 {
        return if whole { 4.0 } else { 1.0 };
    }
    let magnitude = 10f64.powf(quarter.log10().floor());
    let step = [1.0, 2.0, 2.5, 5.0, 10.0]
        .into_iter()
        .map(|step| step * magnitude)
        .find(|step| *step >= quarter)
        .unwrap_or(10.0 * magnitude);
    let step = if whole { step.max(1.0).ceil() } else { step };
    step * 4.0
}

fn number(value: f64, percent: bool) -> String {
    let text = if value >= 100.0 || value.fract() == 0.0 {
        format!("{value:.0}")
    } else if value >= 1.0 {
        format!("{value:.1}")
    } else {
        let text = format!("{value:.3}");
        text.trim_end_matches('0').to_owned()
    };
    if percent { format!("{text} %") } else { text }
}

/// The chart of `series` over `labels` (periods), with `threshold` drawn dashed; values
/// are percentages when `percent`.
pub fn line_chart(
    title: &str,
    labels: &[String],
    series: &[Series],
    threshold: Option<Threshold>,
    percent: bool,
) -> String {
    let highest = series
        .iter()
        .flat_map(|s| s.values.iter().copied())
        .chain(threshold.map(|t| t.value * 1.25))
        .fold(0.0, f64::max);
    let top = nice(highest, !percent);
    let plot_w = WIDTH - LEFT - RIGHT;
    let plot_h = HEIGHT - TOP - BOTTOM;
    #[allow(clippy::cast_precision_loss)]
    let x = |i: usize| {
        if labels.len() <= 1 {
            LEFT + plot_w / 2.0
        } else {
            LEFT + plot_w * i as f64 / (labels.len() - 1) as f64
        }
    };
    let y = |v: f64| TOP + plot_h * (1.0 - v / top);
    let mut svg = String::new();
    let _ = write!(
        svg,
        r#"<svg class="chart" viewBox="0 0 {WIDTH} {HEIGHT}" role="img" aria-label="{}" xmlns="http://www.w3.org/2000/svg">"#,
        escape(title)
    );
    for step in 0..=4 {
        let value = top * f64::from(step) / 4.0;
        let at = y(value);
        let _ = write!(
            svg,
            r#"<line class="grid" x1="{LEFT}" x2="{}" y1="{at:.1}" y2="{at:.1}"/><text class="axis" x="{}" y="{:.1}" text-anchor="end">{}</text>"#,
            WIDTH - RIGHT,
            LEFT - 6.0,
            at + 4.0,
            escape(&number(value, percent))
        );
    }
    // At most eight labels along the bottom.
    let every = labels.len().div_ceil(8).max(1);
    for (i, label) in labels.iter().enumerate() {
        if i % every == 0 {
            let anchor = match i {
                0 if labels.len() > 1 => "start",
                i if i + 1 == labels.len() && i > 0 => "end",
                _ => "middle",
            };
            let _ = write!(
                svg,
                r#"<text class="axis" x="{:.1}" y="{}" text-anchor="{anchor}">{}</text>"#,
                x(i),
                HEIGHT - 8.0,
                escape(label)
            );
        }
    }
    if let Some(threshold) = threshold {
        let at = y(threshold.value);
        let _ = write!(
            svg,
            r#"<line class="threshold" x1="{LEFT}" x2="{}" y1="{at:.1}" y2="{at:.1}"/><text class="threshold-label" x="{}" y="{:.1}" text-anchor="end">{}</text>"#,
            WIDTH - RIGHT,
            WIDTH - RIGHT - 4.0,
            at - 5.0,
            escape(threshold.label)
        );
    }
    for line in series {
        let points: Vec<String> = line
            .values
            .iter()
            .enumerate()
            .map(|(i, v)| format!("{:.1},{:.1}", x(i), y(*v)))
            .collect();
        let _ = write!(
            svg,
            r#"<polyline class="line {}" points="{}"><title>{}</title></polyline>"#,
            escape(line.class),
            points.join(" "),
            escape(line.name)
        );
        if line.values.len() == 1 {
            let _ = write!(
                svg,
                r#"<circle class="dot {}" cx="{:.1}" cy="{:.1}" r="3"/>"#,
                escape(line.class),
                x(0),
                y(line.values[0])
            );
        }
    }
    svg.push_str("</svg>");
    svg
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_chart_escapes_its_text_and_draws_the_threshold() {
        let svg = line_chart(
            "Bounce <rate>",
            &["1 Nov".into(), "2 Nov".into()],
            &[Series {
                name: "bounce & rate",
                class: "s-bounced",
                values: vec![1.0, 6.0],
            }],
            Some(Threshold {
                value: 4.0,
                label: "4 % threshold",
            }),
            true,
        );
        assert!(svg.contains("aria-label=\"Bounce &lt;rate&gt;\""));
        assert!(svg.contains("<title>bounce &amp; rate</title>"));
        assert!(svg.contains("class=\"threshold\""));
        assert!(svg.contains(">8 %<"), "the axis tops at 8 %, in quarters of 2: {svg}");
        assert!(!svg.contains("<script"));
    }

    #[test]
    fn axis_tops_are_round() {
        assert!((nice(0.0, true) - 4.0).abs() < f64::EPSILON);
        assert!((nice(3.0, true) - 4.0).abs() < f64::EPSILON, "counts in whole steps");
        assert!((nice(0.1, false) - 0.1).abs() < 1e-12);
        assert!((nice(1234.0, true) - 2000.0).abs() < f64::EPSILON);
    }
}
