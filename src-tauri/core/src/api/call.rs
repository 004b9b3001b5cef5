//! The one entry point, [`Runtime::call`], and how an op is declared (`op!`). The ops
//! themselves are declared next to their handlers in each `api` module and listed in
//! the `ops` module.
use std::future::Future;
use std::pin::Pin;

/// The reply of an op that waits: a future the caller awaits.
pub type Pending<T> = Pin<Box<dyn Future<Output = T> + Send + 'static>>;

/// An operation on the runtime `R` (`Runtime`), with its typed reply. Sealed: only
/// the ops declared in `api` can be carried out.
pub trait Op<R>: sealed::Run<R> {}

pub(crate) mod sealed {
    /// How an op is carried out. Public in a private module, so `Op` can be named
    /// outside core but not implemented there.
    pub trait Run<R> {
        type Reply;
        fn run(self, rt: &std::sync::Arc<R>) -> Self::Reply;
    }
}

/// Declares ops: `Name { field: Type, … } -> Reply = |rt, op| body;` makes the public
/// struct, its `Op` impl and the handler, which reads the op's fields from `op`. The
/// invoking module names `Runtime`.
macro_rules! op {
    ($(
        $(#[$meta:meta])*
        $name:ident { $($field:ident : $ty:ty),* $(,)? } -> $reply:ty
            = |$rt:ident, $op:ident| $body:expr;
    )*) => {$(
        $(#[$meta])*
        pub struct $name { $(pub $field: $ty),* }

        impl crate::api::call::Op<Runtime> for $name {}

        impl crate::api::call::sealed::Run<Runtime> for $name {
            type Reply = $reply;
            #[allow(unused_variables)]
            fn run(self, $rt: &std::sync::Arc<Runtime>) -> $reply {
                let $op = self;
                $body
            }
        }
    )*};
}
pub(crate) use op;
