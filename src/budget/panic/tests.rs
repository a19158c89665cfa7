use proptest::prelude::*;
use serde_json::{json, Value};

use super::*;
use crate::budget::calibration::{CalibratedMeasure, Calibration};
use crate::budget::ceiling::{check_ceiling, CeilingVerdict, Overflow};
use crate::budget::tokens::TokenMath;
use crate::db::enums::{LoopMode, LoopPriority, RunStatus};
use crate::db::ids::{LoopId, RunId};
use crate::db::json::LoopOptions;
use crate::db::models::run::{LoopEnqueue, LoopRow};

fn loop_row(mode: LoopMode, prompt: &str, config: serde_json::Value) -> LoopRow {
    LoopRow {
        id: LoopId(7),
        run_id: RunId(3),
        sequence: 2,
        mode,
        model: Some("local".to_owned()),
        prompt: prompt.to_owned(),
        priority: LoopPriority::Normal,
        status: RunStatus::Running,
        config: options(config),
        result: None,
        created_at: "2026-04-12 00:00:00".to_owned(),
        requested_by: Some("alice".to_owned()),
        requested_on: None,
    }
}

fn options(config: Value) -> LoopOptions {
    match config {
        Value::Object(object) => LoopOptions(object),
        other => panic!("a loop's config is an object, not {other}"),
    }
}

/// The row the queue would hold for an enqueued loop.
fn claimed(enqueue: &LoopEnqueue) -> LoopRow {
    LoopRow {
        mode: enqueue.mode,
        prompt: enqueue.prompt.clone(),
        priority: enqueue.priority,
        config: options(enqueue.config.clone()),
        ..loop_row(enqueue.mode, "", json!({}))
    }
}

fn overflow(measured: u64, window: u64) -> Overflow {
    match check_ceiling(CalibratedTokens::new(measured), ContextWindow::new(window)) {
        CeilingVerdict::Overflow(overflow) => overflow,
        verdict => panic!("{measured} in {window} should overflow, got {verdict:?}"),
    }
}

fn decide(original: &LoopRow, measured: u64, window: u64, incoming: u64) -> OverflowDecision {
    plan_overflow(&OverflowFacts {
        original,
        overflow: overflow(measured, window),
        incoming_prompt: CalibratedTokens::new(incoming),
        prompt_label: "prompt://12",
        math: TokenMath::new(4),
        calibration: Calibration::IDENTITY,
    })
}

fn enter(decision: OverflowDecision) -> PanicPlan {
    match decision {
        OverflowDecision::EnterPanic(plan) => *plan,
        OverflowDecision::HardFail(failure) => panic!("expected a panic, got: {failure}"),
    }
}

fn hard_fail(decision: OverflowDecision) -> PanicFailure {
    match decision {
        OverflowDecision::HardFail(failure) => failure,
        OverflowDecision::EnterPanic(plan) => panic!("expected a hard failure, got {plan:?}"),
    }
}

fn tokens(count: u64) -> CalibratedTokens {
    CalibratedTokens::new(count)
}

fn measure(count: u64) -> CalibratedMeasure {
    CalibratedMeasure::uncalibrated(count)
}

#[test]
fn an_overflow_enqueues_a_panic_loop_and_a_flagged_retry() {
    let original = loop_row(LoopMode::Act, "refactor auth", json!({"noWeb": true}));
    let plan = enter(decide(&original, 10_400, 10_000, 3_000));
    assert_eq!(plan.target, tokens(6_500), "min(7500, 7000) - 500");
    assert!(plan.predicted > tokens(7_400) && plan.predicted < tokens(7_900));
    assert_eq!(plan.to_free, plan.predicted.saturating_sub(plan.target));

    let panic_loop = &plan.panic_loop;
    assert_eq!(panic_loop.mode, LoopMode::Panic);
    assert_eq!(panic_loop.priority, LoopPriority::Panic);
    assert_eq!(panic_loop.run_id, original.run_id);
    assert_eq!(panic_loop.model, original.model);
    assert_eq!(panic_loop.requested_by.as_deref(), Some("alice"));
    assert_eq!(plan.retry_loop.requested_by.as_deref(), Some("alice"));
    assert_eq!(panic_loop.config[CONFIG_NO_REPO], json!(true));
    assert_eq!(panic_loop.config[CONFIG_PANIC_TARGET], json!(6_500));
    assert_eq!(panic_loop.config[CONFIG_PANIC_FOR], json!("prompt://12"));
    let prompt = &panic_loop.prompt;
    assert!(prompt.contains("6500 tokens or fewer"), "{prompt}");
    assert!(
        prompt.contains(&format!("free at least {} tokens", plan.to_free)),
        "{prompt}"
    );
    assert!(
        prompt.contains(&format!("holds {} tokens", plan.predicted)),
        "{prompt}"
    );
    assert!(prompt.contains("fidelity=\"archive\""), "{prompt}");
    assert!(prompt.contains("80 characters"), "{prompt}");
    assert!(!prompt.contains('{'), "unfilled placeholder: {prompt}");

    let retry = &plan.retry_loop;
    assert_eq!(retry.mode, LoopMode::Act);
    assert_eq!(retry.priority, LoopPriority::Retry);
    assert_eq!(retry.prompt, "refactor auth");
    assert_eq!(retry.config, json!({"noWeb": true, "panicAttempted": true}));
}

#[test]
fn the_panic_prompt_is_measured_into_the_prediction() {
    let original = loop_row(LoopMode::Ask, "q", json!({}));
    let plan = enter(decide(&original, 10_400, 10_000, 3_000));
    let prompt_tokens = TokenMath::new(4).estimate_packet([plan.panic_loop.prompt.as_str()]);
    assert_eq!(plan.predicted.get(), 7_400 + prompt_tokens.get());
}

#[test]
fn the_model_is_told_sizes_in_the_unit_of_its_entries() {
    let original = loop_row(LoopMode::Ask, "q", json!({}));
    let doubled = Calibration::from_turn(
        crate::budget::EstimatedTokens::new(1_000),
        crate::budget::ActualTokens::new(2_000),
    )
    .unwrap();
    let plan = enter(plan_overflow(&OverflowFacts {
        original: &original,
        overflow: overflow(10_400, 10_000),
        incoming_prompt: tokens(3_000),
        prompt_label: "prompt://12",
        math: TokenMath::new(4),
        calibration: doubled,
    }));
    assert_eq!(plan.target, tokens(6_500));
    let prompt = &plan.panic_loop.prompt;
    assert!(prompt.contains("needs ~1500 tokens"), "{prompt}");
    assert!(prompt.contains("MUST be 3250 tokens or fewer"), "{prompt}");

    let mut tracker = plan.tracker();
    let step = tracker.observe(CalibratedMeasure {
        calibrated: tokens(8_000),
        calibration: doubled,
    });
    let PanicStep::Continue {
        to_free,
        continuation,
        ..
    } = step
    else {
        panic!("over the target: {step:?}");
    };
    assert_eq!(
        to_free,
        tokens(1_500),
        "decisions stay in calibrated tokens"
    );
    assert!(
        continuation.contains("Context: 4000 tokens; target: 3250"),
        "{continuation}"
    );
    assert!(continuation.contains("free 750 more"), "{continuation}");
}

#[test]
fn a_panic_that_frees_enough_lets_the_original_prompt_run() {
    let original = loop_row(LoopMode::Act, "refactor auth", json!({}));
    let plan = enter(decide(&original, 10_400, 10_000, 3_000));
    let mut tracker =
        PanicTracker::from_loop(&claimed(&plan.panic_loop), ContextWindow::new(10_000))
            .expect("a panic loop has a tracker");
    assert_eq!(tracker, plan.tracker());

    let PanicStep::Continue {
        to_free, strikes, ..
    } = tracker.observe(measure(plan.predicted.get()))
    else {
        panic!("the first panic turn runs");
    };
    assert_eq!((to_free, strikes), (plan.to_free, 0));
    let PanicStep::Continue { continuation, .. } = tracker.observe(measure(7_000)) else {
        panic!("still over the target");
    };
    assert!(
        continuation.contains("Context: 7000 tokens; target: 6500"),
        "{continuation}"
    );
    assert!(
        continuation.contains("free 500 more tokens"),
        "{continuation}"
    );
    assert!(!continuation.contains("strike"), "{continuation}");
    assert_eq!(
        tracker.observe(measure(6_500)),
        PanicStep::Freed {
            measured: tokens(6_500)
        }
    );

    let retry = claimed(&plan.retry_loop);
    assert_eq!(
        PanicTracker::from_loop(&retry, ContextWindow::new(10_000)),
        None
    );
    let retry_packet = tokens(6_500 + 3_000);
    assert!(matches!(
        check_ceiling(retry_packet, ContextWindow::new(10_000)),
        CeilingVerdict::Fits { .. }
    ));
}

#[test]
fn a_retry_that_still_overflows_fails_instead_of_panicking_again() {
    let original = loop_row(LoopMode::Act, "refactor auth", json!({}));
    let plan = enter(decide(&original, 10_400, 10_000, 3_000));
    let failure = hard_fail(decide(&claimed(&plan.retry_loop), 10_100, 10_000, 3_000));
    assert_eq!(
        failure,
        PanicFailure::RetryStillOver {
            prompt: "prompt://12".to_owned(),
            measured: tokens(10_100),
            window: ContextWindow::new(10_000),
            overflow: 100,
        }
    );
    assert!(failure
        .to_string()
        .contains("prompt://12 still does not fit"));
}

#[test]
fn a_panic_loop_never_panics_again() {
    let original = loop_row(LoopMode::Act, "refactor auth", json!({}));
    let plan = enter(decide(&original, 10_400, 10_000, 3_000));
    let panic_loop = claimed(&plan.panic_loop);
    let failure = hard_fail(decide(&panic_loop, 10_100, 10_000, 0));
    assert!(matches!(failure, PanicFailure::RecoveryOverflowed { .. }));
    assert!(failure.to_string().contains("10000-token context window"));
}

#[test]
fn three_turns_without_shrinking_give_up_naming_the_prompt() {
    let mut tracker = PanicTracker::new(
        tokens(5_000),
        ContextWindow::new(10_000),
        "prompt://4".into(),
    );
    assert!(matches!(
        tracker.observe(measure(8_000)),
        PanicStep::Continue { strikes: 0, .. }
    ));
    assert!(matches!(
        tracker.observe(measure(8_000 - PanicTracker::MEASURE_SLACK)),
        PanicStep::Continue { strikes: 1, .. }
    ));
    let PanicStep::Continue {
        strikes: 2,
        continuation,
        ..
    } = tracker.observe(measure(8_100))
    else {
        panic!("a second strike still runs the turn");
    };
    assert!(continuation.contains("strike 2 of 3"), "{continuation}");
    let PanicStep::GiveUp(failure) = tracker.observe(measure(8_100)) else {
        panic!("the third strike gives up");
    };
    assert_eq!(
        failure,
        PanicFailure::NoProgress {
            prompt: "prompt://4".to_owned(),
            strikes: 3,
            measured: tokens(8_100),
            target: tokens(5_000),
        }
    );
    let message = failure.to_string();
    assert!(
        message.contains("prompt://4") && message.contains("5000 or fewer"),
        "{message}"
    );
}

#[test]
fn any_progress_past_the_slack_clears_the_strikes() {
    let mut tracker = PanicTracker::new(tokens(5_000), ContextWindow::new(10_000), "p".into());
    for measured in [8_000, 8_000, 8_000, 7_997, 7_997, 7_997, 7_000] {
        assert!(matches!(
            tracker.observe(measure(measured)),
            PanicStep::Continue { .. }
        ));
    }
    assert_eq!(tracker.strikes(), 0);
}

#[test]
fn a_prompt_larger_than_the_window_fails_at_once_naming_it() {
    let original = loop_row(LoopMode::Ask, "huge paste", json!({}));
    let failure = hard_fail(decide(&original, 9_500, 8_192, 9_000));
    assert_eq!(
        failure,
        PanicFailure::PromptTooLarge {
            prompt: "prompt://12".to_owned(),
            prompt_tokens: tokens(9_000),
            window: ContextWindow::new(8_192),
        }
    );
    let message = failure.to_string();
    assert!(message.contains("prompt://12 is ~9000 tokens"), "{message}");
    assert!(message.contains("8192-token context window"), "{message}");
}

#[test]
fn a_prompt_that_leaves_no_room_for_the_cushion_fails_too() {
    let original = loop_row(LoopMode::Ask, "big", json!({}));
    let failure = hard_fail(decide(&original, 8_300, 8_192, 7_700));
    assert!(matches!(failure, PanicFailure::PromptTooLarge { .. }));
}

#[test]
fn a_context_with_no_room_for_the_panic_prompt_fails_naming_it() {
    let original = loop_row(LoopMode::Ask, "small", json!({}));
    let failure = hard_fail(decide(&original, 1_200, 1_000, 10));
    let PanicFailure::ContextTooLarge {
        context, window, ..
    } = &failure
    else {
        panic!("expected ContextTooLarge, got {failure:?}");
    };
    assert_eq!(
        (*context, *window),
        (tokens(1_190), ContextWindow::new(1_000))
    );
    assert!(failure
        .to_string()
        .contains("~1190 tokens without the prompt prompt://12"));
}

#[test]
fn a_panic_loop_that_outgrows_the_window_gives_up() {
    let mut tracker = PanicTracker::new(tokens(500), ContextWindow::new(2_000), "p".into());
    assert!(matches!(
        tracker.observe(measure(1_900)),
        PanicStep::Continue { .. }
    ));
    assert!(matches!(
        tracker.observe(measure(1_800)),
        PanicStep::Continue { .. }
    ));
    assert!(matches!(
        tracker.observe(measure(2_100)),
        PanicStep::GiveUp(PanicFailure::RecoveryOverflowed { .. })
    ));
}

#[test]
fn only_panic_loops_with_a_target_have_a_tracker() {
    let window = ContextWindow::new(1_000);
    let without_target = loop_row(LoopMode::Panic, "", json!({"noRepo": true}));
    assert_eq!(PanicTracker::from_loop(&without_target, window), None);
    let act = loop_row(LoopMode::Act, "", json!({"panicTarget": 10}));
    assert_eq!(PanicTracker::from_loop(&act, window), None);
}

proptest! {
    #[test]
    fn the_first_turn_of_a_panic_loop_never_overflows(
        window in 1_000u64..200_000,
        incoming_share in 0u64..=100,
        over in 1u64..5_000,
        estimate in 1u64..1_000,
        actual in 1u64..1_000,
    ) {
        let measured = window + over;
        let incoming = measured * incoming_share / 100;
        let original = loop_row(LoopMode::Act, "task", json!({}));
        let decision = plan_overflow(&OverflowFacts {
            original: &original,
            overflow: overflow(measured, window),
            incoming_prompt: tokens(incoming),
            prompt_label: "prompt://1",
            math: TokenMath::new(2),
            calibration: Calibration::from_turn(
                crate::budget::EstimatedTokens::new(estimate),
                crate::budget::ActualTokens::new(actual),
            ).unwrap_or_default(),
        });
        if let OverflowDecision::EnterPanic(plan) = decision {
            prop_assert!(
                !matches!(
                    check_ceiling(plan.predicted, ContextWindow::new(window)),
                    CeilingVerdict::Overflow(_)
                ),
                "the panic packet must fit the window"
            );
            let step = plan.tracker().observe(measure(plan.predicted.get()));
            prop_assert!(!matches!(step, PanicStep::GiveUp(_)));
            prop_assert!(plan.target.get() > 0);
        }
    }
}
