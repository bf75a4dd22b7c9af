//! The runtime's own native code for the per-byte work of a webhook delivery, so the body never
//! has to cross into WebAssembly: HMAC-SHA256 with WebCrypto (`crypto.subtle`, keys imported
//! once per isolate), UTF-8 decoding with `TextDecoder`, and `JSON.parse`. The decisions stay
//! in the pure modules ([`crate::providers::stripe::signature::decide`], [`crate::providers::decide`],
//! [`crate::providers::stripe::envelope`]).

use std::cell::RefCell;

use js_sys::futures::JsFuture;
use js_sys::{Array, ArrayBuffer, Object, Promise, Reflect, Uint8Array};
use wasm_bindgen::prelude::*;
use wasm_bindgen::JsCast;

use crate::mac::KeyCache;
use crate::providers::stripe::envelope::{EnvelopeError, FieldValue, Fields};

#[wasm_bindgen]
extern "C" {
    #[wasm_bindgen(js_namespace = ["crypto", "subtle"], js_name = importKey, catch)]
    fn import_key(
        format: &str,
        key: &Uint8Array,
        algorithm: &JsValue,
        extractable: bool,
        usages: &Array,
    ) -> Result<Promise, JsValue>;

    #[wasm_bindgen(js_namespace = ["crypto", "subtle"], js_name = sign, catch)]
    fn subtle_sign(algorithm: &str, key: &JsValue, data: &Uint8Array) -> Result<Promise, JsValue>;

    type TextDecoder;

    #[wasm_bindgen(constructor, catch)]
    fn new(label: &str, options: &JsValue) -> Result<TextDecoder, JsValue>;

    #[wasm_bindgen(method, catch)]
    fn decode(this: &TextDecoder, bytes: &Uint8Array) -> Result<JsValue, JsValue>;

    #[wasm_bindgen(js_namespace = JSON, js_name = parse, catch)]
    fn json_parse(text: &JsValue) -> Result<JsValue, JsValue>;
}

thread_local! {
    /// The HMAC keys made in this isolate.
    static KEYS: RefCell<KeyCache<JsValue>> = const { RefCell::new(KeyCache::new()) };
}

/// The WebCrypto HMAC-SHA256 key of each of `secrets`, each made once in the isolate.
async fn hmac_keys(secrets: &[&[u8]]) -> Result<Vec<JsValue>, JsValue> {
    let mut keys = Vec::with_capacity(secrets.len());
    for secret in secrets {
        if let Some(key) = KEYS.with(|held| held.borrow().get(secret)) {
            keys.push(key);
            continue;
        }
        let algorithm = Object::new();
        Reflect::set(&algorithm, &"name".into(), &"HMAC".into())?;
        Reflect::set(&algorithm, &"hash".into(), &"SHA-256".into())?;
        let (bytes, usages) = (Uint8Array::from(*secret), Array::of1(&"sign".into()));
        let key = JsFuture::from(import_key("raw", &bytes, &algorithm, false, &usages)?).await?;
        KEYS.with(|held| held.borrow_mut().add(secret, key.clone()));
        keys.push(key);
    }
    Ok(keys)
}

/// The HMAC-SHA256 of `prefix` then `body` under each of `keys`, computed by WebCrypto (for
/// Stripe the prefix is `"{t}."`, for Standard Webhooks `"{id}.{t}."`, for GitHub and Shopify
/// nothing).
pub async fn macs(
    keys: &[&[u8]],
    prefix: &[u8],
    body: &Uint8Array,
) -> Result<Vec<[u8; 32]>, JsValue> {
    let signed = if prefix.is_empty() {
        body.clone()
    } else {
        super::body::join(prefix, std::slice::from_ref(body))
    };
    let mut macs = Vec::with_capacity(keys.len());
    for key in hmac_keys(keys).await? {
        let mac: ArrayBuffer = JsFuture::from(subtle_sign("HMAC", &key, &signed)?)
            .await?
            .dyn_into()?;
        let mut bytes = [0u8; 32];
        Uint8Array::new(&mac).copy_to(&mut bytes);
        macs.push(bytes);
    }
    Ok(macs)
}

/// The envelope's fields of `body`, decoded as UTF-8 and parsed by the runtime's `JSON.parse`
/// (a duplicated field keeps its last value, as in the handler's own JSON parser).
pub fn envelope_fields(body: &Uint8Array) -> Result<Fields, EnvelopeError> {
    let options = Object::new();
    let _ = Reflect::set(&options, &"fatal".into(), &true.into());
    let text = TextDecoder::new("utf-8", &options)
        .and_then(|decoder| decoder.decode(body))
        .map_err(|_| EnvelopeError::NotJson("not valid UTF-8".into()))?;
    let value = json_parse(&text).map_err(|_| EnvelopeError::NotJson("not valid JSON".into()))?;
    if !value.is_object() || Array::is_array(&value) {
        return Err(EnvelopeError::NotAnObject);
    }
    let field = |name: &str| {
        let found = Reflect::get(&value, &JsValue::from_str(name)).ok()?;
        (!found.is_undefined()).then(|| field_value(&found))
    };
    Ok(Fields {
        id: field("id"),
        event_type: field("type"),
        livemode: field("livemode"),
        created: field("created"),
        object: field("object"),
    })
}

fn field_value(value: &JsValue) -> FieldValue {
    if let Some(text) = value.as_string() {
        return FieldValue::Text(text);
    }
    if let Some(flag) = value.as_bool() {
        return FieldValue::Bool(flag);
    }
    value
        .as_f64()
        .map_or(FieldValue::Other, FieldValue::of_number)
}
