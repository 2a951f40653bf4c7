//! A write-handler call an element makes on an event (Click's
//! `HandlerCall`, `include/click/handlercall.hh`): `ELEMENT.HANDLER
//! [VALUE]`, or a bare `stop`, which stops the router. Sources call one at
//! their LIMIT (END_CALL), Counter at a count (COUNT_CALL).

use bricks_element::Context;

/// Calls to elements that were busy when made, kept for the next timer.
/// Bounded: an element makes at most a few calls per event.
const MAX_PENDING: usize = 8;

/// One `ELEMENT.HANDLER [VALUE]` write.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HandlerCall {
    /// The element, as written (looked up from the caller's compound);
    /// `None` for the router's own `stop`.
    element: Option<String>,
    handler: String,
    value: String,
}

impl HandlerCall {
    /// Parses `ELEMENT.HANDLER [VALUE]` or `stop`.
    pub fn parse(text: &str) -> Result<HandlerCall, String> {
        let text = text.trim();
        let (h, value) = text.split_once(char::is_whitespace).unwrap_or((text, ""));
        let (element, handler) = match h.rsplit_once('.') {
            Some((e, n)) if !e.is_empty() && !n.is_empty() => (Some(e.to_string()), n.to_string()),
            None if h == "stop" => (None, h.to_string()),
            _ => {
                return Err(format!(
                    "bad write handler `{h}` (ELEMENT.HANDLER [VALUE], or stop)"
                ))
            }
        };
        Ok(HandlerCall {
            element,
            handler,
            value: value.trim().to_string(),
        })
    }

    /// The handler and value when the call is to the element named
    /// `own` itself (its name written whole, or relative to its compound).
    pub fn own_call(&self, own: &str) -> Option<(&str, &str)> {
        let e = self.element.as_deref()?;
        let is_own = own == e
            || own
                .strip_suffix(e)
                .is_some_and(|prefix| prefix.ends_with('/'));
        is_own.then_some((self.handler.as_str(), self.value.as_str()))
    }

    /// The call as Click prints it.
    pub fn unparse(&self) -> String {
        let mut s = match &self.element {
            Some(e) => format!("{e}.{}", self.handler),
            None => self.handler.clone(),
        };
        if !self.value.is_empty() {
            s.push(' ');
            s.push_str(&self.value);
        }
        s
    }

    /// Makes the call, as a write to Click's one element: on this
    /// worker's copy and, with several workers, posted for every other
    /// worker's copy, which makes it between its next rounds (this one
    /// does not wait). A call to an element that is busy further up this
    /// worker's stack (the caller itself, or an element pushing into it)
    /// is kept in `pending` and a timer due at once is asked for: the
    /// caller's `run_timer` then makes it with [`HandlerCall::run_pending`].
    /// Errors are printed, as Click's `call_write` reports them.
    pub fn call(&self, cx: &mut Context<'_>, pending: &mut Vec<HandlerCall>) {
        self.call_with(cx, pending, true);
    }

    /// [`HandlerCall::call`] on this worker's copy only: for a call made
    /// again and again (HandlerTask's RESCHEDULE), which every other
    /// worker would otherwise repeat.
    pub fn call_here(&self, cx: &mut Context<'_>, pending: &mut Vec<HandlerCall>) {
        self.call_with(cx, pending, false);
    }

    fn call_with(&self, cx: &mut Context<'_>, pending: &mut Vec<HandlerCall>, everywhere: bool) {
        let Some(e) = &self.element else {
            cx.request_stop();
            return;
        };
        let written = match cx.find_element(e) {
            None => Err(format!("no element matching `{e}'")),
            Some(i) if everywhere => {
                cx.write_handler_everywhere(i, &self.handler, &self.value, false)
            }
            Some(i) => cx.call_handler(i, &self.handler, &self.value, true),
        };
        match written {
            Ok(_) => {}
            Err(err) if err.ends_with("element busy") && pending.len() < MAX_PENDING => {
                pending.push(self.clone());
                let now = cx.now();
                cx.schedule_at(now);
            }
            Err(err) => eprintln!("{}: {}: {err}", cx.name(), self.unparse()),
        }
    }

    /// Makes the calls kept by [`HandlerCall::call`].
    pub fn run_pending(cx: &mut Context<'_>, pending: &mut Vec<HandlerCall>) {
        for c in std::mem::take(pending) {
            let Some(e) = &c.element else { continue };
            let written = match cx.find_element(e) {
                None => Err(format!("no element matching `{e}'")),
                Some(i) => cx.write_handler_everywhere(i, &c.handler, &c.value, false),
            };
            if let Err(err) = written {
                eprintln!("{}: {}: {err}", cx.name(), c.unparse());
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_clicks_forms() {
        let c = HandlerCall::parse("s.active false").unwrap();
        assert_eq!(c.element.as_deref(), Some("s"));
        assert_eq!((c.handler.as_str(), c.value.as_str()), ("active", "false"));
        assert_eq!(c.unparse(), "s.active false");
        let c = HandlerCall::parse("c/q.reset").unwrap();
        assert_eq!(c.element.as_deref(), Some("c/q"));
        assert_eq!(c.unparse(), "c/q.reset");
        assert_eq!(HandlerCall::parse("stop").unwrap().unparse(), "stop");
        let c = HandlerCall::parse("src.reset").unwrap();
        assert_eq!(c.own_call("src"), Some(("reset", "")));
        assert_eq!(c.own_call("comp/src"), Some(("reset", "")));
        assert_eq!(c.own_call("mysrc"), None);
        assert_eq!(HandlerCall::parse("stop").unwrap().own_call("stop"), None);
        for bad in ["", "nodot", ".h", "e.", "stop."] {
            assert!(HandlerCall::parse(bad).is_err(), "{bad}");
        }
    }
}
