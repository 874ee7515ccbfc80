//! The winner's verification: the fastest configuration runs all five verification stages
//! before it is reported as best; while it fails, the next fastest does.

use anyhow::Result;

use super::search_loop::Tally;
use super::{verification, Observer, Rejected, Session, WINNER_CHECKS};
use crate::gpu::Runner;

/// What verifying the winner gave.
pub(super) struct Verified {
    /// The five-stage report of the configuration now best.
    pub report: Option<crate::verify::Report>,
    /// Faster configurations that failed it.
    pub rejected: Vec<Rejected>,
    /// Why no configuration is best, when none of those tried passed.
    pub none_passed: Option<String>,
}

/// Verifies the fastest passing configurations of `tally` in order, reusing earlier
/// verifications from the store, until one passes or [`WINNER_CHECKS`] have run (once one with
/// fast math fails the numerics stage, those with fast math after it are passed over); sets
/// `tally.best` to the one that passed (none when none did). Skipped for replays, with
/// `--no-verify`, when cancelled, and when nothing passed.
pub(super) fn verify(session: &Session, tally: &mut Tally, runner: &mut dyn Runner, observer: &mut dyn Observer) -> Result<Verified> {
    let mut verified = Verified { report: None, rejected: Vec::new(), none_passed: None };
    let Some(pool) = &session.pool else { return Ok(verified) };
    if !session.options.verify_best || observer.cancelled() || tally.best.is_none() {
        return Ok(verified);
    }
    let store = session.tools.store;
    tally.passing.sort_by(|a, b| a.0.total_cmp(&b.0));
    let earlier = store.verifications(&session.key)?;
    let fast_math = session.kernel.params.iter().find(|p| matches!(p.kind, crate::spec::ParamKind::FastMath)).map(|p| p.name.as_str());
    let mut fast_math_failed_numerics = false;
    let mut winner = None;
    let mut attempts = 0;
    for &(_, index) in &tally.passing {
        let config = tally.rows[index].config.clone();
        let stored = earlier.iter().find(|v| v.config == config);
        if fast_math_failed_numerics && uses_fast_math(&config, fast_math) && stored.is_none() {
            tally.rows[index].status = FAST_MATH_PASSED_OVER.to_string();
            continue;
        }
        let reused = stored.filter(|v| v.passed && session.options.reuse_stored).and_then(|v| serde_json::from_str::<crate::verify::Report>(&v.report).ok());
        let report = match (stored, reused) {
            (Some(stored), _) if !stored.passed => Err(stored.summary.clone()),
            (_, Some(report)) => Ok(report),
            _ if attempts == WINNER_CHECKS => break,
            _ => {
                attempts += 1;
                let code = verification::build_code(pool, session.target, &session.arch, &config)?;
                let report = verification::run_and_store(session.kernel, &config, &crate::verify::Stage::ALL, &code, runner, store, &session.key, false, &|| observer.cancelled())?;
                if report.not_run > 0 && report.failure().is_none() {
                    break; // cancelled
                }
                if report.failure().is_some() { Err(report.summary()) } else { Ok(report) }
            }
        };
        match report {
            Ok(report) => {
                verified.report = Some(report);
                winner = Some(index);
                break;
            }
            Err(summary) => {
                fast_math_failed_numerics |= uses_fast_math(&config, fast_math) && fails_numerics(&summary);
                tally.rows[index].status = format!("failed verification: {summary}");
                verified.rejected.push(Rejected { config, summary });
            }
        }
    }
    tally.best = winner.map(|index| tally.rows[index].clone());
    if tally.best.is_none() && !observer.cancelled() {
        verified.none_passed = Some(format!("none of the {} fastest configurations passed verification", verified.rejected.len()));
    }
    Ok(verified)
}

/// The status of a configuration with fast math left unverified after a faster one with fast
/// math failed the numerics stage: fast math's approximations fail it alike (`inf` where the
/// original gives `NaN` on inputs near zero), so the tries go to configurations without it.
const FAST_MATH_PASSED_OVER: &str = "not verified: a faster configuration with fast math failed the numerics stage";

/// Whether `config` compiles with fast math, the parameter `fast_math` names.
fn uses_fast_math(config: &crate::space::Configuration, fast_math: Option<&str>) -> bool {
    fast_math.and_then(|name| config.get(name)).is_some_and(|value| value != 0)
}

/// Whether a verification's summary (`failed stage 3 (numerics) on …`) is a numerics failure.
fn fails_numerics(summary: &str) -> bool {
    summary.contains(&format!("({})", crate::verify::Stage::Numerics.name()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::space::Configuration;

    #[test]
    fn a_numerics_failure_with_fast_math_passes_over_the_other_fast_math_configurations() {
        let fast = Configuration(vec![("BLOCK".into(), 256), ("fast_math".into(), 1)]);
        let exact = Configuration(vec![("BLOCK".into(), 256), ("fast_math".into(), 0)]);
        assert!(uses_fast_math(&fast, Some("fast_math")) && !uses_fast_math(&exact, Some("fast_math")));
        assert!(!uses_fast_math(&fast, None), "a kernel with no fast-math parameter");
        let summary = format!("failed stage 3 ({}) on n=4096, inputs near zero: produces NaN or infinity where the original does not", crate::verify::Stage::Numerics.name());
        assert!(fails_numerics(&summary));
        assert!(!fails_numerics(&format!("failed stage 1 ({}) on n=4096: out[3] = 2, expected 1", crate::verify::Stage::Smoke.name())));
    }
}
