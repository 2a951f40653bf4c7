//! The element classes a router can use, by name.

use crate::ElementClass;

/// Element classes by name. The `elements` crate fills one with every
/// built-in class; a program embedding bricks registers its own next to
/// them.
#[derive(Debug, Clone, Default)]
pub struct Registry {
    classes: Vec<ElementClass>,
}

impl Registry {
    /// An empty registry.
    pub fn new() -> Registry {
        Registry::default()
    }

    /// Adds a class; a class with the same name is replaced.
    pub fn register(&mut self, class: ElementClass) {
        match self.classes.iter_mut().find(|c| c.name == class.name) {
            Some(c) => *c = class,
            None => self.classes.push(class),
        }
    }

    /// The class called `name`.
    pub fn get(&self, name: &str) -> Option<&ElementClass> {
        self.classes.iter().find(|c| c.name == name)
    }

    /// Every class, sorted by name.
    pub fn classes(&self) -> Vec<&ElementClass> {
        let mut v: Vec<_> = self.classes.iter().collect();
        v.sort_by_key(|c| c.name);
        v
    }

    /// Every class name.
    pub fn names(&self) -> impl Iterator<Item = &'static str> + '_ {
        self.classes.iter().map(|c| c.name)
    }
}
