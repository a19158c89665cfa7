//! Reading a cap's amount, whatever carries it (a config file or variable, the users file,
//! `ask`'s JSON): a number of tokens must be whole, a number of dollars a number, and
//! anything else is refused saying so ("invalid value: floating point `1.5`, expected a
//! whole number of tokens, 0 or more"), where serde would only say "expected i64". A
//! negative amount is read, for `CapLimits::checked` to refuse naming its key. Both ask for
//! a float (`deserialize_f64`), which every carrier answers with what it holds: the config
//! converts its environment variables' text, JSON (with arbitrary precision) its digits, so
//! `1.5` tokens arrives as such to be refused rather than as "invalid number"; a whole
//! number of tokens is exact up to 2^53, far past any cap.

use std::fmt;

use serde::de::{Deserializer, Error, Unexpected, Visitor};

/// An amount of tokens; `None` when null.
pub(super) fn tokens<'de, D: Deserializer<'de>>(deserializer: D) -> Result<Option<i64>, D::Error> {
    deserializer.deserialize_option(Tokens)
}

/// An amount of US dollars; `None` when null.
pub(super) fn dollars<'de, D: Deserializer<'de>>(deserializer: D) -> Result<Option<f64>, D::Error> {
    deserializer.deserialize_option(Dollars)
}

struct Tokens;

impl<'de> Visitor<'de> for Tokens {
    type Value = Option<i64>;

    fn expecting(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        formatter.write_str("a whole number of tokens, 0 or more")
    }

    fn visit_none<E: Error>(self) -> Result<Self::Value, E> {
        Ok(None)
    }

    fn visit_unit<E: Error>(self) -> Result<Self::Value, E> {
        Ok(None)
    }

    fn visit_some<D: Deserializer<'de>>(self, deserializer: D) -> Result<Self::Value, D::Error> {
        deserializer.deserialize_f64(self)
    }

    fn visit_i64<E: Error>(self, tokens: i64) -> Result<Self::Value, E> {
        Ok(Some(tokens))
    }

    fn visit_u64<E: Error>(self, tokens: u64) -> Result<Self::Value, E> {
        i64::try_from(tokens)
            .map(Some)
            .map_err(|_| E::invalid_value(Unexpected::Unsigned(tokens), &self))
    }

    fn visit_f64<E: Error>(self, tokens: f64) -> Result<Self::Value, E> {
        // `i64::MAX as f64` rounds up to 2^63, itself out of range: hence `<`.
        let whole = tokens.is_finite() && tokens.fract() == 0.0 && tokens.abs() < i64::MAX as f64;
        match whole {
            true => Ok(Some(tokens as i64)),
            false => Err(E::invalid_value(Unexpected::Float(tokens), &self)),
        }
    }
}

struct Dollars;

impl<'de> Visitor<'de> for Dollars {
    type Value = Option<f64>;

    fn expecting(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        formatter.write_str("a number of US dollars, 0 or more")
    }

    fn visit_none<E: Error>(self) -> Result<Self::Value, E> {
        Ok(None)
    }

    fn visit_unit<E: Error>(self) -> Result<Self::Value, E> {
        Ok(None)
    }

    fn visit_some<D: Deserializer<'de>>(self, deserializer: D) -> Result<Self::Value, D::Error> {
        deserializer.deserialize_f64(self)
    }

    fn visit_f64<E: Error>(self, dollars: f64) -> Result<Self::Value, E> {
        Ok(Some(dollars))
    }

    fn visit_i64<E: Error>(self, dollars: i64) -> Result<Self::Value, E> {
        Ok(Some(dollars as f64))
    }

    fn visit_u64<E: Error>(self, dollars: u64) -> Result<Self::Value, E> {
        Ok(Some(dollars as f64))
    }
}

#[cfg(test)]
mod tests {
    use crate::usage::CapLimits;
    use serde_json::json;

    fn read(caps: serde_json::Value) -> Result<CapLimits, String> {
        serde_json::from_value(caps).map_err(|error| error.to_string())
    }

    #[test]
    fn whole_tokens_and_any_dollars_are_read() {
        let caps = read(json!({"day_tokens": 500, "month_tokens": 2000.0,
                               "day_dollars": 5, "month_dollars": 1.25}))
        .unwrap();
        assert_eq!(
            caps,
            CapLimits {
                day_tokens: Some(500),
                day_dollars: Some(5.0),
                month_tokens: Some(2000),
                month_dollars: Some(1.25),
            }
        );
        assert_eq!(read(json!({"day_tokens": null})), Ok(CapLimits::default()));
        assert_eq!(
            read(json!({"day_tokens": -5})).unwrap().day_tokens,
            Some(-5)
        );
    }

    #[test]
    fn an_amount_of_the_wrong_kind_says_what_it_must_be() {
        for (caps, message) in [
            (
                json!({"day_tokens": 1.5}),
                "invalid value: floating point `1.5`, expected a whole number of tokens, 0 or more",
            ),
            (
                json!({"month_tokens": "5"}),
                "invalid type: string \"5\", expected a whole number of tokens, 0 or more",
            ),
            (
                json!({"day_tokens": u64::MAX}),
                "invalid value: floating point `1.8446744073709552e+19`, expected a whole number",
            ),
            (
                json!({"day_dollars": "5"}),
                "invalid type: string \"5\", expected a number of US dollars, 0 or more",
            ),
        ] {
            let error = read(caps.clone()).unwrap_err();
            assert!(error.starts_with(message), "{caps}: {error}");
        }
    }
}
