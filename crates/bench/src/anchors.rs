//! Published figures of other middleware (`../shared/anchors/*.csv`), shown beside ours and
//! labelled as measured on other hardware: only their proxy / direct ratios are comparable.

use std::collections::BTreeMap;

use crate::error::{BenchError, Result};

/// One published proxy / direct qps ratio.
#[derive(Debug, Clone, PartialEq)]
pub struct PublishedRatio {
    pub system: String,
    pub workload: String,
    pub threads: u32,
    pub ratio: f64,
    pub proxy_qps: f64,
    pub direct_qps: f64,
}

/// Parses an anchors CSV (`section,workload,system,threads,qps,...`). Within each section the
/// `mysql` row is the direct baseline; each other system's ratio is taken from the first section
/// it appears in.
pub fn parse(text: &str) -> Result<Vec<PublishedRatio>> {
    let mut lines = text.lines();
    let header: Vec<&str> = lines.next().unwrap_or("").split(',').collect();
    let col = |name: &str| {
        header
            .iter()
            .position(|h| *h == name)
            .ok_or_else(|| BenchError::parse("anchors CSV", format!("no column {name}")))
    };
    let (sec, wl, sys, thr, qps) = (
        col("section")?,
        col("workload")?,
        col("system")?,
        col("threads")?,
        col("qps")?,
    );
    let mut base: BTreeMap<(String, String, u32), f64> = BTreeMap::new();
    let mut rows = Vec::new();
    for line in lines.filter(|l| !l.trim().is_empty()) {
        let f: Vec<&str> = line.split(',').collect();
        let get = |i: usize| f.get(i).copied().unwrap_or("");
        let threads: u32 = get(thr)
            .parse()
            .map_err(|_| BenchError::parse("anchors CSV", line.to_string()))?;
        let q: f64 = get(qps)
            .parse()
            .map_err(|_| BenchError::parse("anchors CSV", line.to_string()))?;
        let key = (get(sec).to_string(), get(wl).to_string(), threads);
        if get(sys) == "mysql" {
            base.insert(key, q);
        } else {
            rows.push((key, get(sys).to_string(), q));
        }
    }
    let mut out: Vec<PublishedRatio> = Vec::new();
    for ((section, workload, threads), system, proxy_qps) in rows {
        let Some(&direct_qps) = base.get(&(section, workload.clone(), threads)) else {
            continue;
        };
        // A system already listed, or the same figures republished under another name.
        let seen = out.iter().any(|r| {
            r.workload == workload
                && r.threads == threads
                && (r.system == system || (r.proxy_qps == proxy_qps && r.direct_qps == direct_qps))
        });
        if !seen && direct_qps > 0.0 {
            out.push(PublishedRatio {
                system,
                workload,
                threads,
                ratio: proxy_qps / direct_qps,
                proxy_qps,
                direct_qps,
            });
        }
    }
    Ok(out)
}

/// Whether a published system belongs next to a topology: replica set-ups are named
/// `...master-slave` in the published reports; none of them is sharded.
pub fn matches_topology(system: &str, topology: &str) -> bool {
    match topology {
        "sharded" => false,
        "single" => !system.contains("master-slave"),
        _ => system.contains("master-slave"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const CSV: &str = "section,workload,system,threads,qps,tps,avg_ms,max_ms,p99_ms,proxy_cpu_pct
1.4.4,oltp_point_select,mysql,4,1000.0,1000,1,1,1,
1.4.4,oltp_point_select,gaea-2.3.7,4,440.0,440,1,1,1,
2.4.4,oltp_point_select,mysql,4,2000.0,2000,1,1,1,
2.4.4,oltp_point_select,gaea-2.3.7,4,1800.0,1800,1,1,1,
2.4.4,oltp_point_select,gaea-2.3.7-master-slave,4,1500.0,1500,1,1,1,
2.4.4,oltp_point_select,gaea-single-master,4,1800.0,1800,1,1,1,
3.4.4,oltp_point_select,mysql,4,1000.0,1000,1,1,1,
3.4.4,oltp_point_select,gaea-again,4,440.0,440,1,1,1,
";

    #[test]
    fn ratios_are_per_section_first_section_wins_and_republished_figures_are_dropped() {
        let r = parse(CSV).unwrap();
        let systems: Vec<&str> = r.iter().map(|x| x.system.as_str()).collect();
        assert_eq!(systems, ["gaea-2.3.7", "gaea-2.3.7-master-slave", "gaea-single-master"]);
        assert_eq!(r[0].system, "gaea-2.3.7");
        assert!((r[0].ratio - 0.44).abs() < 1e-9);
        assert_eq!(r[1].system, "gaea-2.3.7-master-slave");
        assert!((r[1].ratio - 0.75).abs() < 1e-9);
    }

    #[test]
    fn topology_matching_and_bad_files() {
        assert!(matches_topology("gaea-2.3.7", "single"));
        assert!(!matches_topology("gaea-2.3.7-master-slave", "single"));
        assert!(matches_topology("gaea-2.3.7-master-slave", "replica"));
        assert!(!matches_topology("gaea-2.3.7", "sharded"));
        assert!(!matches_topology("gaea-2.3.7-master-slave", "sharded"));
        assert!(parse("a,b\n1,2\n").is_err());
        assert!(parse("section,workload,system,threads,qps\n1,x,mysql,four,1\n").is_err());
    }
}
