//! PLACEHOLDER: not implemented yet; replaced by the real backend.
use crate::{Backend, CodecError, ParamInfo, Params, Stream};
pub struct Placeholder(&'static str, bool);
pub static LZ4M: Placeholder = Placeholder("lz4m", true);
impl Backend for Placeholder {
    fn name(&self) -> &'static str { self.0 }
    fn description(&self) -> &'static str { "not implemented yet" }
    fn params(&self) -> &'static [ParamInfo] { &[] }
    fn in_kernel(&self) -> bool { self.1 }
    fn new_stream(&self, _p: &Params) -> Result<Box<dyn Stream>, CodecError> {
        Err(CodecError::invalid_param(self.0, "not implemented yet"))
    }
}
