//! Generated string tokens for the tests of the readers of one token (`escape.rs`,
//! `scan.rs`): an opening quote, a few pieces drawn from the test's list, usually a closing
//! quote, then some text after it. A seeded generator, so a failure names a token that comes
//! back on every run.

pub(crate) struct Tokens<'p> {
    state: u64,
    pieces: &'p [&'p [u8]],
    /// Up to one less than this many pieces a token.
    pieces_max: usize,
    /// What may follow the token: a prefix of this, up to one byte short of it.
    after: &'p [u8],
}

impl<'p> Tokens<'p> {
    pub(crate) fn new(
        seed: u64,
        pieces: &'p [&'p [u8]],
        pieces_max: usize,
        after: &'p [u8],
    ) -> Self {
        Tokens {
            state: seed,
            pieces,
            pieces_max,
            after,
        }
    }

    /// A number below `n` (a 64-bit LCG's high bits).
    fn below(&mut self, n: usize) -> usize {
        self.state = self
            .state
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        (self.state >> 33) as usize % n
    }

    /// The next token, with what follows it.
    pub(crate) fn next_token(&mut self) -> Vec<u8> {
        let mut token = b"\"".to_vec();
        for _ in 0..self.below(self.pieces_max) {
            let piece = self.pieces[self.below(self.pieces.len())];
            token.extend_from_slice(piece);
        }
        if self.below(20) != 0 {
            token.push(b'"');
        }
        let after = self.below(self.after.len());
        token.extend_from_slice(&self.after[..after]);
        token
    }
}
