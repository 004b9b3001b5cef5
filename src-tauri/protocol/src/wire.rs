//! Enums whose values are names on the wire and in the store's text columns.
use std::fmt;

/// A name that is not one of an enum's values: which enum, and what was found.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown {what} `{found}`")]
pub struct UnknownName {
    pub what: &'static str,
    pub found: String,
}

/// What every wire enum can do: the store reads and writes text columns through this.
pub trait WireName: Sized + Copy + fmt::Display + 'static {
    const WHAT: &'static str;
    const ALL: &'static [Self];
    fn as_str(self) -> &'static str;
    fn from_name(s: &str) -> Result<Self, UnknownName> {
        Self::ALL
            .iter()
            .copied()
            .find(|v| v.as_str() == s)
            .ok_or_else(|| UnknownName {
                what: Self::WHAT,
                found: s.to_owned(),
            })
    }
}

/// Declares an enum of names: serde, `Display`, `FromStr`, `WireName`, and specta behind
/// the `specta` feature, all from one list, so a name is written once.
#[macro_export]
macro_rules! wire_enum {
    (
        $(#[$meta:meta])*
        pub enum $name:ident {
            $( $(#[$vmeta:meta])* $variant:ident = $text:literal ),+ $(,)?
        }
    ) => {
        $(#[$meta])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
        #[cfg_attr(feature = "specta", derive(specta::Type))]
        #[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
        pub enum $name {
            $( $(#[$vmeta])* #[serde(rename = $text)] $variant ),+
        }

        impl $crate::wire::WireName for $name {
            const WHAT: &'static str = stringify!($name);
            const ALL: &'static [Self] = &[$($name::$variant),+];
            fn as_str(self) -> &'static str {
                match self { $($name::$variant => $text),+ }
            }
        }

        impl $name {
            pub fn as_str(self) -> &'static str {
                <Self as $crate::wire::WireName>::as_str(self)
            }
        }

        impl std::fmt::Display for $name {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str(self.as_str())
            }
        }

        impl std::str::FromStr for $name {
            type Err = $crate::wire::UnknownName;
            fn from_str(s: &str) -> Result<Self, Self::Err> {
                <Self as $crate::wire::WireName>::from_name(s)
            }
        }
    };
}
