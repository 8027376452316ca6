//! Named policies chosen in the config file and in CQL options: a table's replica
//! [`Layout`] and the coordinator's [`ReplicaSelection`].
//!
//! Each is parsed once, where the text enters (config, `WITH layout = …`), into an enum; the
//! parse error names the valid values. Past that edge nobody compares strings.

use std::collections::BTreeMap;
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
        /// ELECT: one tree per source, the cold last level of each node's primary tree
        /// Reed-Solomon-coded across nodes and offloaded to the cold tier.
        ErasureTiered => "erasure-tiered",
        /// Heterogeneous replicas: each replica index of a range sorts its rows by its own
        /// permutation of the clustering columns (`replica_orders`).
        Heterogeneous => "heterogeneous",
    }
);

/// The values one layout option takes.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum OptionKind {
    /// An integer in `min..=max`.
    Integer {
        /// The smallest value.
        min: u32,
        /// The largest value.
        max: u32,
    },
    /// A fraction in `0.0..=max`.
    Fraction {
        /// The largest value.
        max: f64,
    },
    /// Clustering orders, one per replica index: `(b, c, a), (c, b, a)`
    /// ([`parse_replica_orders`]; the table's columns are checked by the schema).
    Orders,
    /// `true` or `false`.
    Flag,
}

/// One option a table's `layout = {'class': …, …}` map may give a layout.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct LayoutOption {
    /// Its name in the map.
    pub name: &'static str,
    /// The values it takes.
    pub kind: OptionKind,
    /// Its value when the map does not give it (`None`: the node's `[storage]` setting).
    pub default: Option<&'static str>,
}

const fn integer(
    name: &'static str,
    min: u32,
    max: u32,
    default: Option<&'static str>,
) -> LayoutOption {
    LayoutOption {
        name,
        kind: OptionKind::Integer { min, max },
        default,
    }
}

/// DEPART's S, and the global-log segments a split takes (0: no global log, flushes
/// write straight into the range groups); `[storage]`'s defaults.
const DECOUPLED_OPTIONS: [LayoutOption; 2] = [
    integer("sorted_runs_max", 1, u32::MAX, None),
    integer("split_segments", 0, u32::MAX, None),
];

/// ELECT's code (k data shards of n) and storage saving target α.
const ERASURE_TIERED_OPTIONS: [LayoutOption; 3] = [
    integer("ec_k", 1, 64, Some("4")),
    integer("ec_n", 2, 96, Some("6")),
    LayoutOption {
        name: "storage_saving_target",
        kind: OptionKind::Fraction { max: 1.0 },
        default: Some("0.6"),
    },
];

/// Heterogeneous replicas' orders and their automatic re-optimization.
const HETEROGENEOUS_OPTIONS: [LayoutOption; 3] = [
    LayoutOption {
        name: "replica_orders",
        kind: OptionKind::Orders,
        default: Some(""),
    },
    LayoutOption {
        name: "auto",
        kind: OptionKind::Flag,
        default: Some("false"),
    },
    LayoutOption {
        name: "auto_min_gain",
        kind: OptionKind::Fraction { max: 1.0 },
        default: Some("0.2"),
    },
];

/// Parses `replica_orders`: comma-separated parenthesized lists of column names, one per
/// replica index (`(b, c, a), (c, b, a)`); names are lowercased unless double-quoted, as
/// CQL identifiers are. Only the syntax is checked here.
pub fn parse_replica_orders(text: &str) -> Result<Vec<Vec<String>>, String> {
    let bad = |why: &str| format!("Invalid replica_orders '{text}': {why}");
    let mut orders = Vec::new();
    let mut rest = text.trim();
    while !rest.is_empty() {
        let Some(open) = rest.strip_prefix('(') else {
            return Err(bad("expected '(' starting an order"));
        };
        let Some(close) = open.find(')') else {
            return Err(bad("an order is missing its ')'"));
        };
        let inner = open.get(..close).unwrap_or_default();
        let mut order = Vec::new();
        for name in inner.split(',') {
            let name = name.trim();
            let name = match name.strip_prefix('"').and_then(|n| n.strip_suffix('"')) {
                Some(quoted) if !quoted.is_empty() => quoted.to_owned(),
                _ if !name.is_empty()
                    && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') =>
                {
                    name.to_ascii_lowercase()
                }
                _ => return Err(bad(&format!("'{name}' is not a column name"))),
            };
            order.push(name);
        }
        orders.push(order);
        rest = open.get(close + 1..).unwrap_or_default().trim_start();
        if let Some(after) = rest.strip_prefix(',') {
            rest = after.trim_start();
            if rest.is_empty() {
                return Err(bad("trailing ','"));
            }
        } else if !rest.is_empty() {
            return Err(bad("expected ',' between orders"));
        }
    }
    Ok(orders)
}

/// The canonical text of parsed orders: `(a, b, c), (b, c, a)`.
pub fn format_replica_orders(orders: &[Vec<String>]) -> String {
    orders
        .iter()
        .map(|o| {
            let names: Vec<String> = o
                .iter()
                .map(|n| {
                    if n.chars()
                        .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_')
                    {
                        n.clone()
                    } else {
                        format!("\"{n}\"")
                    }
                })
                .collect();
            format!("({})", names.join(", "))
        })
        .collect::<Vec<_>>()
        .join(", ")
}

impl Layout {
    /// The options a table's `layout = {'class': …, …}` map may give this layout.
    pub fn options(self) -> &'static [LayoutOption] {
        match self {
            Layout::Uniform | Layout::MultiLsm => &[],
            Layout::Decoupled => &DECOUPLED_OPTIONS,
            Layout::ErasureTiered => &ERASURE_TIERED_OPTIONS,
            Layout::Heterogeneous => &HETEROGENEOUS_OPTIONS,
        }
    }

    /// The names of [`Layout::options`].
    pub fn option_names(self) -> Vec<&'static str> {
        self.options().iter().map(|o| o.name).collect()
    }

    /// Checks a map's options for this layout and returns them in canonical form (numbers
    /// as the numbers they are, so `'020'` and `'20'` are one value); the error says what
    /// is wrong in the words a user reads.
    pub fn check_options(
        self,
        given: &BTreeMap<String, String>,
    ) -> Result<BTreeMap<String, String>, String> {
        let known = self.options();
        let mut out = BTreeMap::new();
        for (name, value) in given {
            let Some(option) = known.iter().find(|o| o.name == name) else {
                let takes = if known.is_empty() {
                    "it takes no options".to_owned()
                } else {
                    format!("it takes: {}", self.option_names().join(", "))
                };
                return Err(format!(
                    "Unknown option '{name}' for layout '{self}'; {takes}"
                ));
            };
            let value = value.trim();
            let canonical = match option.kind {
                OptionKind::Integer { min, max } => match value.parse::<u32>() {
                    Ok(n) if (min..=max).contains(&n) => n.to_string(),
                    _ => {
                        return Err(format!(
                            "Invalid value '{value}' for layout option '{name}': must be an \
                             integer {}",
                            if max == u32::MAX {
                                format!(">= {min}")
                            } else {
                                format!("from {min} to {max}")
                            }
                        ))
                    }
                },
                OptionKind::Orders => format_replica_orders(&parse_replica_orders(value)?),
                OptionKind::Flag => match value.to_ascii_lowercase().as_str() {
                    v @ ("true" | "false") => v.to_owned(),
                    _ => {
                        return Err(format!(
                            "Invalid value '{value}' for layout option '{name}': must be true \
                             or false"
                        ))
                    }
                },
                OptionKind::Fraction { max } => match value.parse::<f64>() {
                    Ok(x) if (0.0..=max).contains(&x) => x.to_string(),
                    _ => {
                        return Err(format!(
                            "Invalid value '{value}' for layout option '{name}': must be a \
                             number from 0 to {max}"
                        ))
                    }
                },
            };
            out.insert(name.clone(), canonical);
        }
        if self == Layout::ErasureTiered {
            let code = ErasureCode::from_options(&out);
            if code.k >= code.n {
                return Err(format!(
                    "Invalid erasure code for layout 'erasure-tiered': ec_k ({}) must be \
                     smaller than ec_n ({})",
                    code.k, code.n
                ));
            }
        }
        Ok(out)
    }
}

/// An `erasure-tiered` table's code and saving target, from its layout options.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct ErasureCode {
    /// Data shards per coding group (`ec_k`).
    pub k: usize,
    /// Shards per coding group, data and parity (`ec_n`).
    pub n: usize,
    /// The storage saving target α (`storage_saving_target`).
    pub alpha: f64,
}

impl Default for ErasureCode {
    fn default() -> Self {
        ErasureCode::from_options(&BTreeMap::new())
    }
}

impl ErasureCode {
    /// The code a table's (checked) layout options give, defaults filled in.
    pub fn from_options(options: &BTreeMap<String, String>) -> ErasureCode {
        let get = |name: &str| {
            let default = ERASURE_TIERED_OPTIONS
                .iter()
                .find(|o| o.name == name)
                .and_then(|o| o.default)
                .unwrap_or("0");
            options.get(name).map_or(default, String::as_str).to_owned()
        };
        ErasureCode {
            k: get("ec_k").parse().unwrap_or(4),
            n: get("ec_n").parse().unwrap_or(6),
            alpha: get("storage_saving_target").parse().unwrap_or(0.6),
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
        /// Each read one replica further along the ring order than the last.
        RoundRobin => "round-robin",
        /// A random order.
        Random => "random",
        /// Hector's: popular keys round-robin, the rest always to the primary.
        PopularityAware => "popularity-aware",
        /// C3's scoring: response and service times, queue lengths, reads outstanding.
        C3 => "c3",
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
            "unknown layout `lsm`; valid values: uniform, multi-lsm, decoupled, erasure-tiered, \
             heterogeneous"
        );
        assert_eq!(
            "primary-first".parse::<ReplicaSelection>(),
            Ok(ReplicaSelection::PrimaryFirst)
        );
        assert!("Primary-First".parse::<ReplicaSelection>().is_err());
    }

    fn map(entries: &[(&str, &str)]) -> BTreeMap<String, String> {
        entries
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect()
    }

    #[test]
    fn layout_options_are_checked_and_kept_canonical() {
        let d = Layout::Decoupled;
        assert_eq!(
            d.check_options(&map(&[("sorted_runs_max", " 020")])),
            Ok(map(&[("sorted_runs_max", "20")]))
        );
        let e = d
            .check_options(&map(&[("sorted_runs_max", "0")]))
            .unwrap_err();
        assert!(e.contains("must be an integer >= 1"), "{e}");
        let e = d.check_options(&map(&[("ec_k", "4")])).unwrap_err();
        assert!(
            e.contains("it takes: sorted_runs_max, split_segments"),
            "{e}"
        );
        let e = Layout::Uniform
            .check_options(&map(&[("x", "1")]))
            .unwrap_err();
        assert!(e.contains("it takes no options"), "{e}");

        let et = Layout::ErasureTiered;
        let ok = et
            .check_options(&map(&[
                ("ec_k", "6"),
                ("ec_n", "8"),
                ("storage_saving_target", "0.50"),
            ]))
            .unwrap();
        assert_eq!(ok["storage_saving_target"], "0.5");
        assert_eq!(
            ErasureCode::from_options(&ok),
            ErasureCode {
                k: 6,
                n: 8,
                alpha: 0.5
            }
        );
        assert_eq!(
            ErasureCode::default(),
            ErasureCode {
                k: 4,
                n: 6,
                alpha: 0.6
            }
        );
        let e = et.check_options(&map(&[("ec_k", "6")])).unwrap_err();
        assert!(e.contains("ec_k (6) must be smaller than ec_n (6)"), "{e}");
        let e = et
            .check_options(&map(&[("storage_saving_target", "1.5")]))
            .unwrap_err();
        assert!(e.contains("must be a number from 0 to 1"), "{e}");
        let e = et.check_options(&map(&[("ec_n", "1000")])).unwrap_err();
        assert!(e.contains("from 2 to 96"), "{e}");
    }

    #[test]
    fn replica_orders_parse_and_print_canonically() {
        let h = Layout::Heterogeneous;
        let ok = h
            .check_options(&map(&[
                ("replica_orders", " (B,c, a),(\"Mixed\" , c,b) "),
                ("auto", "TRUE"),
            ]))
            .unwrap();
        assert_eq!(ok["replica_orders"], "(b, c, a), (\"Mixed\", c, b)");
        assert_eq!(ok["auto"], "true");
        assert_eq!(
            parse_replica_orders(&ok["replica_orders"]).unwrap(),
            vec![vec!["b", "c", "a"], vec!["Mixed", "c", "b"]]
        );
        assert_eq!(parse_replica_orders("").unwrap(), Vec::<Vec<String>>::new());
        for bad in [
            "(a, b", "a, b", "(a) (b)", "(a, b),", "(a, , b)", "(a-b)", "(a)(b",
        ] {
            assert!(parse_replica_orders(bad).is_err(), "{bad}");
        }
        let e = h.check_options(&map(&[("auto", "yes")])).unwrap_err();
        assert!(e.contains("must be true or false"), "{e}");
    }
}
