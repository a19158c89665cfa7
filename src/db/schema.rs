//! Diesel's view of the tables and views created by `migrations/`.
//!
//! Written by hand to match the migrations (the diesel CLI is not part of the toolchain);
//! `diesel.toml` points the CLI here for anyone who has it. The views are declared as tables
//! with a chosen primary key so they can be queried with the DSL; never write to them.

#![allow(missing_docs)]

diesel::table! {
    schemes (name) {
        name -> Text,
        model_visible -> Bool,
        category -> Text,
    }
}

diesel::table! {
    projects (id) {
        id -> BigInt,
        name -> Text,
        project_root -> Nullable<Text>,
        created_at -> Text,
        command_rules -> Integer,
    }
}

diesel::table! {
    models (id) {
        id -> BigInt,
        alias -> Text,
        actual -> Text,
        context_length -> Nullable<Integer>,
        created_at -> Text,
        input_price -> BigInt,
        cached_price -> BigInt,
        output_price -> BigInt,
    }
}

diesel::table! {
    runs (id) {
        id -> BigInt,
        project_id -> BigInt,
        parent_run_id -> Nullable<BigInt>,
        model -> Nullable<Text>,
        status -> Integer,
        alias -> Text,
        temperature -> Nullable<Double>,
        persona -> Nullable<Text>,
        context_limit -> Nullable<Integer>,
        next_turn -> Integer,
        next_loop -> Integer,
        created_at -> Text,
        created_by -> Nullable<Text>,
        delegated_by -> Nullable<BigInt>,
        title -> Nullable<Text>,
        title_by -> Nullable<Text>,
        caps -> Nullable<Text>,
    }
}

diesel::table! {
    loops (id) {
        id -> BigInt,
        run_id -> BigInt,
        sequence -> Integer,
        mode -> Text,
        model -> Nullable<Text>,
        prompt -> Text,
        priority -> Integer,
        status -> Integer,
        config -> Text,
        result -> Nullable<Text>,
        created_at -> Text,
        requested_by -> Nullable<Text>,
        requested_on -> Nullable<BigInt>,
    }
}

diesel::table! {
    turns (id) {
        id -> BigInt,
        run_id -> BigInt,
        loop_id -> BigInt,
        sequence -> Integer,
        context_tokens -> Integer,
        reasoning_content -> Nullable<Text>,
        prompt_tokens -> Integer,
        cached_tokens -> Integer,
        completion_tokens -> Integer,
        reasoning_tokens -> Integer,
        total_tokens -> Integer,
        cost -> Double,
        created_at -> Text,
    }
}

diesel::table! {
    file_constraints (id) {
        id -> BigInt,
        project_id -> BigInt,
        pattern -> Text,
        visibility -> Text,
        created_at -> Text,
    }
}

diesel::table! {
    known_entries (id) {
        id -> BigInt,
        run_id -> BigInt,
        loop_id -> Nullable<BigInt>,
        turn -> Integer,
        path -> Text,
        body -> Text,
        scheme -> Nullable<Text>,
        status -> Integer,
        fidelity -> Text,
        hash -> Nullable<Text>,
        attributes -> Text,
        tokens -> Integer,
        tokens_full -> Integer,
        refs -> Integer,
        write_count -> Integer,
        created_at -> Text,
        updated_at -> Text,
    }
}

diesel::table! {
    turn_context (id) {
        id -> BigInt,
        run_id -> BigInt,
        loop_id -> Nullable<BigInt>,
        turn -> Integer,
        ordinal -> Integer,
        path -> Text,
        scheme -> Nullable<Text>,
        status -> Integer,
        fidelity -> Text,
        body -> Text,
        tokens -> Integer,
        attributes -> Text,
        category -> Text,
        source_turn -> Integer,
        change -> Text,
        entry_id -> Nullable<BigInt>,
    }
}

diesel::table! {
    rpc_log (id) {
        id -> BigInt,
        project_id -> Nullable<BigInt>,
        method -> Text,
        rpc_id -> Nullable<Text>,
        params -> Nullable<Text>,
        result -> Nullable<Text>,
        error -> Nullable<Text>,
        created_at -> Text,
        duration_ms -> Nullable<BigInt>,
        status -> Nullable<BigInt>,
        params_bytes -> Nullable<BigInt>,
        result_bytes -> Nullable<BigInt>,
        run -> Nullable<Text>,
        person -> Nullable<Text>,
    }
}

diesel::table! {
    run_events (run_id, seq) {
        run_id -> BigInt,
        seq -> BigInt,
        bytes -> BigInt,
        created_ms -> BigInt,
        frame -> Text,
    }
}

diesel::table! {
    v_unresolved (id) {
        id -> BigInt,
        run_id -> BigInt,
        path -> Text,
        body -> Text,
        attributes -> Text,
        turn -> Integer,
    }
}

diesel::table! {
    v_model_context (entry_id) {
        entry_id -> BigInt,
        run_id -> BigInt,
        path -> Text,
        scheme -> Nullable<Text>,
        fidelity -> Text,
        status -> Integer,
        body -> Text,
        attributes -> Text,
        category -> Text,
        turn -> Integer,
        ordinal -> BigInt,
        tokens -> Integer,
    }
}

diesel::table! {
    v_run_log (id) {
        id -> BigInt,
        run_id -> BigInt,
        path -> Text,
        body -> Text,
        status -> Integer,
        tool -> Text,
        target -> Text,
    }
}

diesel::table! {
    run_actions (id) {
        id -> BigInt,
        run_id -> BigInt,
        loop_id -> Nullable<BigInt>,
        person -> Nullable<Text>,
        action -> Text,
        path -> Nullable<Text>,
        created_at -> Text,
    }
}

diesel::table! {
    memory_facts (id) {
        id -> BigInt,
        project_id -> Nullable<BigInt>,
        topic -> Text,
        body -> Text,
        run_id -> Nullable<BigInt>,
        person -> Nullable<Text>,
        created_at -> Text,
        updated_at -> Text,
        by_person -> Bool,
        transient -> Bool,
    }
}

diesel::table! {
    memory_history (id) {
        id -> BigInt,
        project_id -> Nullable<BigInt>,
        topic -> Text,
        body -> Text,
        reason -> Text,
        run_id -> Nullable<BigInt>,
        written_at -> Text,
        archived_at -> Text,
        folded -> Integer,
    }
}

diesel::table! {
    memory_disabled (project_id) {
        project_id -> BigInt,
        person -> Nullable<Text>,
        disabled_at -> Text,
    }
}

diesel::joinable!(runs -> projects (project_id));
diesel::joinable!(run_actions -> runs (run_id));
diesel::joinable!(loops -> runs (run_id));
diesel::joinable!(turns -> loops (loop_id));
diesel::joinable!(file_constraints -> projects (project_id));
diesel::joinable!(known_entries -> runs (run_id));
diesel::joinable!(turn_context -> runs (run_id));
diesel::joinable!(rpc_log -> projects (project_id));

diesel::allow_tables_to_appear_in_same_query!(
    schemes,
    projects,
    models,
    runs,
    loops,
    turns,
    file_constraints,
    known_entries,
    turn_context,
    rpc_log,
    run_actions,
    run_events,
    memory_facts,
    memory_history,
    memory_disabled,
    v_unresolved,
    v_model_context,
    v_run_log,
);
