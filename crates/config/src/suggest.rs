//! "Did you mean ...?" for misspelt class, element, keyword and variable
//! names.

/// The candidate closest to `name`, if one is close enough to be a likely
/// typo: equal ignoring case, or within an edit distance (with
/// transpositions) of one per four characters of the name, at least one.
/// A looser bound (a third) offered `Strip` for `Script`: two edits in six
/// letters is another word, not a typo. Ties go to the earliest candidate.
///
/// ```
/// use bricks_config::suggest;
/// let classes = ["Discard", "Queue", "Classifier", "Strip"];
/// assert_eq!(suggest("Discrad", classes), Some("Discard"));
/// assert_eq!(suggest("queue", classes), Some("Queue"));
/// assert_eq!(suggest("Script", classes), None);
/// assert_eq!(suggest("Counter", classes), None);
/// ```
pub fn suggest<'a>(name: &str, candidates: impl IntoIterator<Item = &'a str>) -> Option<&'a str> {
    let lower = name.to_lowercase();
    let threshold = (name.chars().count() / 4).max(1);
    let mut best: Option<(usize, &'a str)> = None;
    for candidate in candidates {
        if candidate == name {
            continue;
        }
        let distance = if candidate.to_lowercase() == lower {
            0
        } else {
            strsim::osa_distance(&lower, &candidate.to_lowercase())
        };
        if distance <= threshold && best.is_none_or(|(d, _)| distance < d) {
            best = Some((distance, candidate));
        }
    }
    best.map(|(_, c)| c)
}

#[cfg(test)]
mod tests {
    use super::suggest;

    #[test]
    fn finds_typos_and_case_mistakes() {
        let names = ["ARPQuerier", "ARPResponder", "Discard", "DecIPTTL", "Strip"];
        assert_eq!(suggest("ARPQueirer", names), Some("ARPQuerier"));
        assert_eq!(suggest("decipttl", names), Some("DecIPTTL"));
        assert_eq!(suggest("Stirp", names), Some("Strip"));
        assert_eq!(suggest("Strp", names), Some("Strip"));
        assert_eq!(suggest("Counter", names), None);
        assert_eq!(suggest("Script", names), None);
        assert_eq!(suggest("ARPQuerer", names), Some("ARPQuerier"));
        assert_eq!(suggest("ARPResponer", names), Some("ARPResponder"));
        assert_eq!(suggest("X", names), None);
        assert_eq!(suggest("Discard", names), None);
        assert_eq!(suggest("a", []), None);
    }

    #[test]
    fn prefers_the_closest() {
        assert_eq!(suggest("LIMT", ["LENGTH", "LIMIT"]), Some("LIMIT"));
        assert_eq!(suggest("BURS", ["BURST", "BURSTS"]), Some("BURST"));
    }
}
