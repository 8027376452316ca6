//! Named policies chosen in the config file and in CQL options: a table's replica
//! [`Layout`] and the coordinator's [`ReplicaSelection`].
//!
//! Each is parsed once, where the text enters (config, `WITH layout = …`), into an enum; the
//! parse error names the valid values. Past that edge nobody compares strings.

use std::fmt;
use std::str::FromStr;

/// A name that is not one of a policy's values.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("unknown {what} `{given}`; valid values: {valid}")]
pub struct ParsePolicyError {
    /// What was being named (`layout`, `replica_selection`).
    pub what: &'static str,
    /// The text given.
    pub given: String,
    /// The valid names, comma-separated.
    pub valid: String,
}

/// Defines a fieldless enum spelled by fixed names, with `ALL`, `name`, `parse`, `FromStr`
/// (erroring with the valid names), `Display` and serde as that string.
macro_rules! named_enum {
    (
        $(#[$doc:meta])* $name:ident, $what:literal,
        { $( $(#[$vdoc:meta])* $variant:ident => $text:literal, )+ }
    ) => {
        $(#[$doc])*
        #[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, PartialOrd, Ord)]
        pub enum $name {
            $( $(#[$vdoc])* $variant, )+
        }

        impl $name {
            /// Every value, in the order they are documented.
            pub const ALL: [$name; [$(stringify!($variant)),+].len()] = [$($name::$variant),+];

            /// The value's name as config files and CQL options spell it.
            pub fn name(self) -> &'static str {
                match self {
                    $( $name::$variant => $text, )+
                }
            }

            /// The value named `name`, if any.
            pub fn parse(name: &str) -> Option<$name> {
                $name::ALL.into_iter().find(|v| v.name() == name)
            }

            /// The valid names, comma-separated (for error messages).
            pub fn valid_names() -> String {
                $name::ALL.iter().map(|v| v.name()).collect::<Vec<_>>().join(", ")
            }
        }

        /// Compares with a name as config files and CQL options spell it.
        impl PartialEq<&str> for $name {
            fn eq(&self, other: &&str) -> bool {
                self.name() == *other
            }
        }

        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(self.name())
            }
        }

        impl FromStr for $name {
            type Err = ParsePolicyError;

            fn from_str(s: &str) -> Result<$name, ParsePolicyError> {
                $name::parse(s).ok_or_else(|| ParsePolicyError {
                    what: $what,
                    given: s.to_owned(),
                    valid: $name::valid_names(),
                })
            }
        }

        impl serde::Serialize for $name {
            fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
                s.serialize_str(self.name())
            }
        }

        impl<'de> serde::Deserialize<'de> for $name {
            fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<$name, D::Error> {
                let text = <std::borrow::Cow<'de, str>>::deserialize(d)?;
                text.parse().map_err(serde::de::Error::custom)
            }
        }
    };
}

named_enum!(
    /// How a table's replicas are stored on each node (the `layout` table option and
    /// `[storage] layout`).
    Layout, "layout", {
        /// Every replica in one LSM-tree (Cassandra's uniform indexing). The default.
        #[default]
        Uniform => "uniform",
        /// One LSM-tree per replica source: k trees per node at replication factor k.
        MultiLsm => "multi-lsm",
        /// DEPART: primary copies in an LSM-tree, redundant copies in a two-layer log.
        Decoupled => "decoupled",
    }
);

impl Layout {
    /// The options a table's `layout = {'class': …, …}` map may give this layout, each an
    /// integer of at least 1.
    pub fn option_names(self) -> &'static [&'static str] {
        match self {
            Layout::Uniform | Layout::MultiLsm => &[],
            // DEPART's S, and the global-log segments a split takes (`[storage]`'s defaults).
            Layout::Decoupled => &["sorted_runs_max", "split_segments"],
        }
    }
}

named_enum!(
    /// How a coordinator orders the replicas of a read (`[cluster] replica_selection`).
    ReplicaSelection, "replica_selection", {
        /// Cassandra's dynamic snitch: replicas by recent latency. The default.
        #[default]
        DynamicSnitch => "dynamic-snitch",
        /// DEPART's replica-aware reads: the primary replica first.
        PrimaryFirst => "primary-first",
    }
);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip_and_errors_name_the_valid_values() {
        for l in Layout::ALL {
            assert_eq!(l.name().parse::<Layout>(), Ok(l));
        }
        let e = "lsm".parse::<Layout>().unwrap_err().to_string();
        assert_eq!(
            e,
            "unknown layout `lsm`; valid values: uniform, multi-lsm, decoupled"
        );
        assert_eq!(
            "primary-first".parse::<ReplicaSelection>(),
            Ok(ReplicaSelection::PrimaryFirst)
        );
        assert!("Primary-First".parse::<ReplicaSelection>().is_err());
    }
}
