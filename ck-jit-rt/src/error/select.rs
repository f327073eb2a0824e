//! What a family selection reports when no member can be chosen: no
//! member meets the query ([`NoMatch`]), or two of its constraints cannot
//! hold together ([`Conflict`]). They are carried by
//! [`Error`](super::Error); the family code fills them in.

use std::fmt;

use ck_jit_manifest::escape;

/// No blob of a family meets a query: per constraint, how many blobs it
/// let through and what values the family has instead.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NoMatch(pub(crate) Box<Report>);

/// The content of a [`NoMatch`], boxed to keep errors small.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Report {
    pub(crate) family: String,
    pub(crate) query: String,
    pub(crate) total: usize,
    pub(crate) constraints: Vec<String>,
    pub(crate) together: Option<String>,
    /// Keys of the query no candidate has, each with close keys they have.
    pub(crate) unknown_keys: Vec<(String, Vec<String>)>,
    pub(crate) families: Vec<String>,
    pub(crate) suggestions: Vec<String>,
    /// Members left out because they do not run on the device in use.
    pub(crate) device: Option<String>,
}

impl NoMatch {
    /// The family searched.
    pub fn family(&self) -> &str {
        &self.0.family
    }

    /// How many blobs the family has.
    pub fn candidates(&self) -> usize {
        self.0.total
    }
}

impl fmt::Display for NoMatch {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let this = &self.0;
        let family = escape(&this.family);
        if this.total == 0 {
            write!(f, "family '{family}' has no blobs in the manifest")?;
            let quote = |names: &[String]| -> Vec<String> {
                names.iter().map(|n| format!("'{}'", escape(n))).collect()
            };
            if !this.suggestions.is_empty() {
                write!(
                    f,
                    "; did you mean {}?",
                    quote(&this.suggestions).join(" or ")
                )?;
            } else if !this.families.is_empty() {
                let all = quote(&this.families);
                let more = all.len().saturating_sub(10);
                write!(f, " (families: {}", all[..all.len() - more].join(", "))?;
                if more > 0 {
                    write!(f, ", ... ({more} more)")?;
                }
                write!(f, ")")?;
            }
            return Ok(());
        }
        write!(f, "no {family} blob matches {}", this.query)?;
        if !this.constraints.is_empty() {
            write!(f, ": {}", this.constraints.join("; "))?;
        }
        if let Some(together) = &this.together {
            write!(f, "; {together}")?;
        }
        for (key, near) in &this.unknown_keys {
            write!(f, "; no {family} blob has the key '{}'", escape(key))?;
            if !near.is_empty() {
                let near: Vec<String> = near.iter().map(|k| escape(k)).collect();
                write!(f, "; did you mean '{}'?", near.join("', '"))?;
            }
        }
        if let Some(device) = &this.device {
            write!(f, "; {}", escape(device))?;
        }
        Ok(())
    }
}

/// Two constraints that no metadata value meets together, such as
/// `dtype = fp16` and `dtype = bf16`: from [`Query::and`](crate::Query::and), a selection
/// ([`Error::Conflict`](super::Error::Conflict)) or a
/// [`Selector`](crate::Selector) step.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Conflict {
    pub(crate) key: String,
    pub(crate) first: String,
    pub(crate) second: String,
}

impl Conflict {
    /// The metadata key both constraints are about.
    pub fn key(&self) -> &str {
        &self.key
    }

    /// The constraint that was there first (`dtype = fp16`).
    pub fn first(&self) -> &str {
        &self.first
    }

    /// The constraint that could not be added to it (`dtype = bf16`).
    pub fn second(&self) -> &str {
        &self.second
    }
}

impl fmt::Display for Conflict {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} conflicts with {}: no value of {} meets both",
            self.first,
            self.second,
            escape(&self.key)
        )
    }
}
