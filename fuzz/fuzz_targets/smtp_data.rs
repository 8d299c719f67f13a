//! Fuzzes the DATA receiver: no input may panic; a completed message never contains a
//! bare CR or LF; and stuffing then receiving a CRLF message gives it back.

#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let mut receiver = herald_smtp::DataReceiver::new(1 << 20);
    if let Ok(progress) = receiver.feed(data) {
        if progress.done {
            let message = receiver.into_message();
            for (i, byte) in message.iter().enumerate() {
                match byte {
                    b'\r' => assert_eq!(message.get(i + 1), Some(&b'\n')),
                    b'\n' => assert_eq!(i.checked_sub(1).map(|p| message[p]), Some(b'\r')),
                    _ => {}
                }
            }
            let mut again = herald_smtp::DataReceiver::new(1 << 20);
            let stuffed = herald_smtp::stuff(&message);
            assert!(again.feed(&stuffed).map(|p| p.done).unwrap_or(false));
            assert_eq!(again.into_message(), message);
        }
    }
});
