//! IPsec ESP.
