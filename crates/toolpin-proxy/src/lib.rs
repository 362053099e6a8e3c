//! `toolpin proxy`: the facade between an agent and its tool servers. The
//! agent is served the pinned catalog (with facade overrides, without
//! withdrawn tools); calls are checked and relayed upstream.

pub mod validate;
