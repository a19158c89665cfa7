//! Budget advisories for `<progress>`: a gentle note from half of the ceiling, a demand
//! from three quarters (seed SPEC §4.5).

use super::text;
use super::tokens::CalibratedTokens;

/// Percent of the ceiling from which the gentle advisory shows.
pub(crate) const ADVISORY_HALF_PERCENT: u64 = 50;
/// Percent of the ceiling from which the demand shows.
pub(crate) const ADVISORY_THREE_QUARTERS_PERCENT: u64 = 75;

/// The advisory sentence for a context of `used` tokens under `ceiling`, if any.
pub(crate) fn advisory(used: CalibratedTokens, ceiling: CalibratedTokens) -> Option<String> {
    if ceiling.get() == 0 {
        return None;
    }
    let percent = u128::from(used.get()) * 100 / u128::from(ceiling.get());
    let template = if percent >= u128::from(ADVISORY_THREE_QUARTERS_PERCENT) {
        text::ADVISORY_THREE_QUARTERS
    } else if percent >= u128::from(ADVISORY_HALF_PERCENT) {
        text::ADVISORY_HALF
    } else {
        return None;
    };
    Some(text::fill(template, &[("percent", percent.to_string())]))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn advise(used: u64, ceiling: u64) -> Option<String> {
        advisory(CalibratedTokens::new(used), CalibratedTokens::new(ceiling))
    }

    #[test]
    fn below_half_there_is_nothing_to_say() {
        assert_eq!(advise(0, 1000), None);
        assert_eq!(advise(499, 1000), None);
    }

    #[test]
    fn from_half_the_model_may_free_space() {
        let note = advise(500, 1000).unwrap();
        assert!(note.contains("50% of the budget used"), "{note}");
        assert!(note.contains("YOU MAY"), "{note}");
        assert!(!note.contains("YOU MUST"), "{note}");
        assert!(advise(749, 1000).unwrap().contains("YOU MAY"));
    }

    #[test]
    fn from_three_quarters_the_model_must_free_space() {
        let demand = advise(750, 1000).unwrap();
        assert!(demand.contains("YOU MUST"), "{demand}");
        assert!(demand.contains("75% of"), "{demand}");
        assert!(advise(2500, 1000).unwrap().contains("250% of"));
    }

    #[test]
    fn a_zero_ceiling_gives_no_advice() {
        assert_eq!(advise(10, 0), None);
    }

    #[test]
    fn every_advisory_is_filled() {
        for used in [500, 800, u64::MAX] {
            let text = advise(used, 1000).unwrap();
            assert!(!text.contains('{'), "{text}");
        }
    }
}
