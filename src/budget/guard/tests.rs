use proptest::prelude::*;

use super::*;
use crate::budget::tokens::{ActualTokens, EntryTokens, EstimatedTokens};
use crate::db::enums::EntryStatus;

fn write(tokens_delta: i64) -> WriteIntent {
    WriteIntent {
        tokens_delta,
        status: EntryStatus::Ok,
        fidelity: Fidelity::Full,
        is_audit: false,
    }
}

fn guard(ceiling: u64, current: u64) -> BudgetGuard {
    BudgetGuard::new(
        CalibratedTokens::new(ceiling),
        CalibratedTokens::new(current),
        Calibration::IDENTITY,
    )
}

#[test]
fn a_gate_in_a_window_holds_writes_to_its_guard_ceiling_in_calibrated_units() {
    let calibration =
        Calibration::from_turn(EstimatedTokens::new(1), ActualTokens::new(2)).unwrap();
    let context = CalibratedMeasure {
        calibrated: CalibratedTokens::new(8_000),
        calibration,
    };
    let mut gate = BudgetGuard::in_window(ContextWindow::new(10_000), context);
    assert_eq!(
        gate.ceiling().get(),
        8_500,
        "90 % of the window less the cushion"
    );
    assert_eq!(gate.check(&write(250)), Ok(()), "500 calibrated tokens");
    assert_eq!(gate.total().get(), 8_500);
    assert!(gate.check(&write(1)).is_err());
}

#[test]
fn writes_up_to_the_ceiling_pass_and_are_counted() {
    let mut guard = guard(1000, 900);
    assert_eq!(guard.check(&write(60)), Ok(()));
    assert_eq!(guard.check(&write(40)), Ok(()));
    assert_eq!(guard.total().get(), 1000);
    assert!(!guard.is_tripped());
}

#[test]
fn the_crossing_write_trips_and_every_later_tool_fails() {
    let mut guard = guard(1000, 900);
    let refused = guard.check(&write(101)).unwrap_err();
    assert_eq!(
        refused,
        Tripped::Crossed {
            write_tokens: EntryTokens::new(101),
            room: EntryTokens::new(100),
        }
    );
    assert_eq!(guard.total().get(), 900, "a refused write is not counted");
    assert!(guard.is_tripped());
    let skipped = Tripped::Skipped;
    assert_eq!(guard.check(&write(1)), Err(skipped));
    assert_eq!(
        guard.check(&write(-50)),
        Err(skipped),
        "shrinking tools fail too"
    );
    assert_eq!(guard.ensure_open(), Err(skipped));
}

#[test]
fn a_write_refused_alone_leaves_the_guard_open_for_smaller_ones() {
    let mut guard = guard(1000, 900);
    assert!(guard.check_alone(&write(101)).is_err());
    assert!(!guard.is_tripped());
    assert_eq!(guard.total().get(), 900, "a refused write is not counted");
    assert_eq!(guard.check_alone(&write(100)), Ok(()));
    assert_eq!(guard.total().get(), 1000);
}

#[test]
fn shrinking_writes_free_room() {
    let mut guard = guard(1000, 1000);
    assert_eq!(guard.check(&write(-300)), Ok(()));
    assert_eq!(guard.check(&write(300)), Ok(()));
    assert_eq!(guard.total().get(), 1000);
}

#[test]
fn exempt_writes_pass_even_after_a_trip() {
    let mut guard = guard(100, 100);
    assert!(guard.check(&write(1)).is_err());
    let error_result = WriteIntent {
        status: EntryStatus::TooLarge,
        ..write(40)
    };
    let audit = WriteIntent {
        is_audit: true,
        ..write(10_000)
    };
    let archive = WriteIntent {
        fidelity: Fidelity::Archive,
        ..write(10_000)
    };
    assert_eq!(guard.check(&error_result), Ok(()));
    assert_eq!(guard.check(&audit), Ok(()));
    assert_eq!(guard.check(&archive), Ok(()));
    assert_eq!(
        guard.total().get(),
        140,
        "only the visible error result counts"
    );
}

#[test]
fn archiving_credits_what_it_frees() {
    let mut guard = guard(1000, 1000);
    let archive = WriteIntent {
        fidelity: Fidelity::Archive,
        ..write(-400)
    };
    assert_eq!(guard.check(&archive), Ok(()));
    assert_eq!(guard.check(&write(400)), Ok(()));
    assert!(guard.check(&write(1)).is_err());
}

#[test]
fn a_turn_that_starts_over_the_ceiling_refuses_any_growth() {
    let mut guard = guard(1000, 1200);
    assert_eq!(guard.check(&write(0)), Ok(()));
    assert!(guard.check(&write(1)).is_err());
}

#[test]
fn deltas_are_scaled_by_the_calibration() {
    let calibration =
        Calibration::from_turn(EstimatedTokens::new(100), ActualTokens::new(200)).unwrap();
    let mut guard = BudgetGuard::new(
        CalibratedTokens::new(1000),
        CalibratedTokens::new(800),
        calibration,
    );
    assert_eq!(guard.check(&write(100)), Ok(()));
    assert_eq!(guard.total().get(), 1000);
    let refused = guard.check(&write(1)).unwrap_err();
    assert_eq!(
        guard.total().get(),
        1000,
        "2 calibrated tokens do not fit in 0"
    );

    let mut guard = BudgetGuard::new(
        CalibratedTokens::new(1000),
        CalibratedTokens::new(700),
        calibration,
    );
    let refused_large = guard.check(&write(200)).unwrap_err();
    assert_eq!(
        refused_large,
        Tripped::Crossed {
            write_tokens: EntryTokens::new(200),
            room: EntryTokens::new(150),
        },
        "the message speaks in entry tokens: 300 calibrated are 150 on entries"
    );
    assert!(matches!(refused, Tripped::Crossed { .. }));
}

#[test]
fn messages_teach_freeing_space_in_rfc_2119_words() {
    let crossed = Tripped::Crossed {
        write_tokens: EntryTokens::new(120),
        room: EntryTokens::new(35),
    }
    .message();
    assert!(crossed.starts_with("413 "), "{crossed}");
    assert!(crossed.contains("~120 tokens"), "{crossed}");
    assert!(crossed.contains("only ~35 tokens remain"), "{crossed}");
    assert!(crossed.contains("YOU MUST free space"), "{crossed}");
    assert!(crossed.contains("fidelity=\"archive\""), "{crossed}");
    assert!(crossed.contains("split"), "{crossed}");
    let skipped = Tripped::Skipped.to_string();
    assert!(skipped.contains("earlier write"), "{skipped}");
    assert!(skipped.contains("YOU MUST"), "{skipped}");
    assert!(!crossed.contains('{') && !skipped.contains('{'));
}

fn intent_strategy() -> impl Strategy<Value = WriteIntent> {
    (
        -2_000i64..2_000,
        prop_oneof![
            4 => Just(EntryStatus::Ok),
            1 => Just(EntryStatus::NotFound),
            1 => Just(EntryStatus::TooLarge)
        ],
        prop_oneof![
            4 => Just(Fidelity::Full),
            1 => Just(Fidelity::Summary),
            1 => Just(Fidelity::Index),
            1 => Just(Fidelity::Archive),
        ],
        prop::bool::weighted(0.1),
    )
        .prop_map(|(tokens_delta, status, fidelity, is_audit)| WriteIntent {
            tokens_delta,
            status,
            fidelity,
            is_audit,
        })
}

fn calibration_strategy() -> impl Strategy<Value = Calibration> {
    (1u64..5_000, 1u64..5_000).prop_map(|(estimate, actual)| {
        Calibration::from_turn(EstimatedTokens::new(estimate), ActualTokens::new(actual))
            .unwrap_or_default()
    })
}

proptest! {
    #[test]
    fn the_guard_trips_exactly_at_the_first_crossing_write(
        ceiling in 0u64..20_000,
        current in 0u64..20_000,
        calibration in calibration_strategy(),
        intents in prop::collection::vec(intent_strategy(), 0..60),
    ) {
        let mut guard = BudgetGuard::new(
            CalibratedTokens::new(ceiling),
            CalibratedTokens::new(current),
            calibration,
        );
        let mut tripped_at = None;
        for (index, intent) in intents.iter().enumerate() {
            let before = guard.total();
            let outcome = guard.check(intent);
            if !intent.is_gated() {
                prop_assert_eq!(outcome, Ok(()));
                continue;
            }
            if tripped_at.is_some() {
                prop_assert!(matches!(outcome, Err(Tripped::Skipped)), "expected a skip");
                prop_assert_eq!(guard.total(), before);
                continue;
            }
            let delta = calibration.scale_delta(intent.tokens_delta);
            let crosses = delta > 0 && before.get() + delta.unsigned_abs() > ceiling;
            if crosses {
                prop_assert!(matches!(outcome, Err(Tripped::Crossed { .. })), "expected a trip");
                prop_assert_eq!(guard.total(), before, "a refused write is not counted");
                tripped_at = Some(index);
            } else {
                prop_assert_eq!(outcome, Ok(()));
                if delta > 0 {
                    prop_assert!(guard.total().get() <= ceiling, "an admitted write crossed");
                }
            }
            prop_assert_eq!(guard.is_tripped(), tripped_at.is_some());
        }
    }

    #[test]
    fn without_exempt_writes_the_total_never_crosses_a_ceiling_it_started_under(
        ceiling in 0u64..20_000,
        start in 0u64..20_000,
        deltas in prop::collection::vec(-2_000i64..2_000, 0..60),
    ) {
        let current = start.min(ceiling);
        let mut guard = guard(ceiling, current);
        for delta in deltas {
            let _ = guard.check(&write(delta));
            prop_assert!(guard.total().get() <= ceiling);
        }
    }
}
