//! Declarations shared by the header modules.

/// A field value with named variants and an `Unknown` fallback, so that a
/// packet holding a value nobody assigned still round-trips exactly.
///
/// Build values from the wire with `From<$ty>`: `Unknown(1)` written by hand
/// is not equal to the named variant for 1.
macro_rules! enum_with_unknown {
    (
        $(#[$enum_attr:meta])*
        pub enum $name:ident($ty:ty) {
            $(
                $(#[$variant_attr:meta])*
                $variant:ident = $value:literal
            ),+ $(,)?
        }
    ) => {
        $(#[$enum_attr])*
        #[derive(Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Clone, Copy)]
        pub enum $name {
            $(
                $(#[$variant_attr])*
                $variant,
            )+
            /// A value this crate has no name for.
            Unknown($ty),
        }

        impl ::core::convert::From<$ty> for $name {
            #[inline]
            fn from(value: $ty) -> Self {
                match value {
                    $( $value => $name::$variant, )+
                    other => $name::Unknown(other),
                }
            }
        }

        impl ::core::convert::From<$name> for $ty {
            #[inline]
            fn from(value: $name) -> Self {
                match value {
                    $( $name::$variant => $value, )+
                    $name::Unknown(other) => other,
                }
            }
        }
    };
}

/// A transparent number with named constants, for fields whose value space
/// is open (EtherType, IP protocol): matching on a constant costs the same
/// as matching on the number.
macro_rules! number_with_names {
    (
        $(#[$attr:meta])*
        pub struct $name:ident($ty:ty), unknown as $unknown_fmt:literal {
            $(
                $(#[$const_attr:meta])*
                $konst:ident = $value:literal, $text:literal;
            )+
        }
    ) => {
        $(#[$attr])*
        #[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
        pub struct $name(pub $ty);

        impl $name {
            $(
                $(#[$const_attr])*
                pub const $konst: $name = $name($value);
            )+

            /// The registered name of this value, if this crate knows it.
            pub const fn name(self) -> Option<&'static str> {
                match self.0 {
                    $( $value => Some($text), )+
                    _ => None,
                }
            }
        }

        impl ::core::convert::From<$ty> for $name {
            #[inline]
            fn from(value: $ty) -> Self {
                $name(value)
            }
        }

        impl ::core::convert::From<$name> for $ty {
            #[inline]
            fn from(value: $name) -> Self {
                value.0
            }
        }

        impl ::core::fmt::Display for $name {
            fn fmt(&self, f: &mut ::core::fmt::Formatter<'_>) -> ::core::fmt::Result {
                match self.name() {
                    Some(text) => f.write_str(text),
                    None => write!(f, $unknown_fmt, self.0),
                }
            }
        }

        impl ::core::fmt::Debug for $name {
            fn fmt(&self, f: &mut ::core::fmt::Formatter<'_>) -> ::core::fmt::Result {
                write!(f, concat!(stringify!($name), "({})"), self)
            }
        }
    };
}
