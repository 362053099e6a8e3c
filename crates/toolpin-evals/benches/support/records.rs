//! Case records for the compare benchmark, generated without a random
//! crate (a fixed linear congruential sequence), about 1 KB per run.

pub const CASES: usize = 10_000;
pub const REPEATS: u32 = 5;

const TOOLS: [&str; 8] = [
    "orders__lookup_order",
    "orders__search_orders",
    "orders__refund_order",
    "billing__get_invoice",
    "billing__list_payments",
    "crm__find_customer",
    "crm__add_note",
    "shipping__track_parcel",
];

/// One side's records as JSON lines; `after` drifts: a tenth of the cases
/// make three more calls and fail more often.
pub fn generate(after: bool) -> Vec<u8> {
    let mut out = Vec::with_capacity(CASES * REPEATS as usize * 1100);
    let mut state: u64 = if after { 2 } else { 1 };
    let mut next = move || {
        state = state
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        (state >> 33) as u32
    };
    for repeat in 0..REPEATS {
        for case in 0..CASES {
            let drifted = after && case % 10 == 0;
            let calls = 3 + (next() % 3) as usize + if drifted { 3 } else { 0 };
            let fail_per_mille = if drifted { 400 } else { 80 };
            let passed = next() % 1000 >= fail_per_mille;
            let mut line = format!(
                "{{\"case\":\"case-{case:05}\",\"passed\":{passed},\"score\":{},\"repeat\":{repeat},\"tool_calls\":[",
                if passed { "1.0" } else { "0.0" }
            );
            for k in 0..calls {
                let tool = TOOLS[(case + k + (next() % 2) as usize) % TOOLS.len()];
                if k > 0 {
                    line.push(',');
                }
                line.push_str(&format!(
                    "{{\"name\":\"{tool}\",\"arguments\":{{\"order_id\":\"ORD-{:06}\",\"email\":\"customer{}@example.com\",\"note\":\"The customer asked about the delivery window and a partial refund for the damaged item.\"}}}}",
                    next() % 1_000_000,
                    next() % 100_000
                ));
            }
            let input = 600 + next() % 400;
            line.push_str(&format!(
                "],\"turns\":{},\"cost\":{{\"input_tokens\":{input},\"output_tokens\":{},\"usd\":{:.5}}},\"error\":{}}}\n",
                calls + 1,
                50 + next() % 100,
                f64::from(input) * 3e-6,
                if passed { "null".to_string() } else { "\"wrong refund amount\"".to_string() }
            ));
            out.extend_from_slice(line.as_bytes());
        }
    }
    out
}
