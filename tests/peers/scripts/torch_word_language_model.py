"""pytorch/examples word_language_model (model.py's RNNModel + main.py's training loop), with
``torch`` renamed ``minigrad``.

A synthetic corpus (a noisy cyclic token stream from NumPy, fixed seed) stands in for
Wikitext-2's ``data.Corpus``. The loop is the example's: batchify, get_batch with bptt,
repackage_hidden, clip_grad_norm_, and the manual SGD update ``p.data.add_(p.grad, alpha=-lr)``
with the learning rate annealed by 4 when validation does not improve. ``main()`` returns the
per-step training losses and each epoch's validation loss.
"""

import argparse
import math
import time

import numpy as np

import minigrad
import minigrad.nn as nn
import minigrad.nn.functional as F


class RNNModel(nn.Module):
    """Container module with an encoder, a recurrent module, and a decoder."""

    def __init__(self, rnn_type, ntoken, ninp, nhid, nlayers, dropout=0.5, tie_weights=False):
        super(RNNModel, self).__init__()
        self.ntoken = ntoken
        self.drop = nn.Dropout(dropout)
        self.encoder = nn.Embedding(ntoken, ninp)
        if rnn_type in ['LSTM', 'GRU']:
            self.rnn = getattr(nn, rnn_type)(ninp, nhid, nlayers, dropout=dropout)
        else:
            nonlinearity = {'RNN_TANH': 'tanh', 'RNN_RELU': 'relu'}[rnn_type]
            self.rnn = nn.RNN(ninp, nhid, nlayers, nonlinearity=nonlinearity, dropout=dropout)
        self.decoder = nn.Linear(nhid, ntoken)

        if tie_weights:
            if nhid != ninp:
                raise ValueError('When using the tied flag, nhid must be equal to emsize')
            self.decoder.weight = self.encoder.weight

        self.init_weights()

        self.rnn_type = rnn_type
        self.nhid = nhid
        self.nlayers = nlayers

    def init_weights(self):
        initrange = 0.1
        nn.init.uniform_(self.encoder.weight, -initrange, initrange)
        nn.init.zeros_(self.decoder.bias)
        nn.init.uniform_(self.decoder.weight, -initrange, initrange)

    def forward(self, input, hidden):
        emb = self.drop(self.encoder(input))
        output, hidden = self.rnn(emb, hidden)
        output = self.drop(output)
        decoded = self.decoder(output)
        decoded = decoded.view(-1, self.ntoken)
        return F.log_softmax(decoded, dim=1), hidden

    def init_hidden(self, bsz):
        weight = next(self.parameters())
        if self.rnn_type == 'LSTM':
            return (weight.new_zeros(self.nlayers, bsz, self.nhid),
                    weight.new_zeros(self.nlayers, bsz, self.nhid))
        else:
            return weight.new_zeros(self.nlayers, bsz, self.nhid)


def synthetic_corpus(ntokens, length, seed):
    rng = np.random.default_rng(seed)
    ids = np.arange(length) % ntokens
    noise = rng.random(length) < 0.1
    ids[noise] = rng.integers(0, ntokens, size=int(noise.sum()))
    return minigrad.tensor(ids, dtype=minigrad.long)


def batchify(data, bsz, device):
    # Work out how cleanly we can divide the dataset into bsz parts.
    nbatch = data.size(0) // bsz
    # Trim off any extra elements that wouldn't cleanly fit (remainders).
    data = data.narrow(0, 0, nbatch * bsz)
    # Evenly divide the data across the bsz batches.
    data = data.view(bsz, -1).t().contiguous()
    return data.to(device)


def repackage_hidden(h):
    """Wraps hidden states in new Tensors, to detach them from their history."""
    if isinstance(h, minigrad.Tensor):
        return h.detach()
    else:
        return tuple(repackage_hidden(v) for v in h)


def get_batch(source, i, bptt):
    seq_len = min(bptt, len(source) - 1 - i)
    data = source[i:i+seq_len]
    target = source[i+1:i+1+seq_len].view(-1)
    return data, target


def main(argv=()):
    parser = argparse.ArgumentParser(description='PyTorch Wikitext-2 RNN/LSTM Language Model')
    parser.add_argument('--model', type=str, default='LSTM')
    parser.add_argument('--emsize', type=int, default=16)
    parser.add_argument('--nhid', type=int, default=16)
    parser.add_argument('--nlayers', type=int, default=2)
    parser.add_argument('--lr', type=float, default=5)
    parser.add_argument('--clip', type=float, default=0.25)
    parser.add_argument('--epochs', type=int, default=3)
    parser.add_argument('--batch_size', type=int, default=4, metavar='N')
    parser.add_argument('--bptt', type=int, default=8)
    parser.add_argument('--dropout', type=float, default=0.2)
    parser.add_argument('--tied', action='store_true')
    parser.add_argument('--seed', type=int, default=1111)
    parser.add_argument('--log-interval', type=int, default=2, metavar='N')
    args = parser.parse_args(list(argv))

    # Set the random seed manually for reproducibility.
    minigrad.manual_seed(args.seed)
    device = minigrad.device("cuda" if minigrad.cuda.is_available() else "cpu")

    ntokens = 12
    eval_batch_size = 4
    train_data = batchify(synthetic_corpus(ntokens, 192, seed=0), args.batch_size, device)
    val_data = batchify(synthetic_corpus(ntokens, 64, seed=1), eval_batch_size, device)

    model = RNNModel(args.model, ntokens, args.emsize, args.nhid, args.nlayers, args.dropout,
                     args.tied).to(device)
    criterion = nn.NLLLoss()

    def evaluate(data_source):
        # Turn on evaluation mode which disables dropout.
        model.eval()
        total_loss = 0.
        hidden = model.init_hidden(eval_batch_size)
        with minigrad.no_grad():
            for i in range(0, data_source.size(0) - 1, args.bptt):
                data, targets = get_batch(data_source, i, args.bptt)
                output, hidden = model(data, hidden)
                hidden = repackage_hidden(hidden)
                total_loss += len(data) * criterion(output, targets).item()
        return total_loss / (len(data_source) - 1)

    def train(epoch, lr, losses):
        # Turn on training mode which enables dropout.
        model.train()
        total_loss = 0.
        start_time = time.time()
        hidden = model.init_hidden(args.batch_size)
        for batch, i in enumerate(range(0, train_data.size(0) - 1, args.bptt)):
            data, targets = get_batch(train_data, i, args.bptt)
            # Starting each batch, we detach the hidden state from how it was previously produced.
            # If we didn't, the model would try backpropagating all the way to start of the dataset.
            model.zero_grad()
            hidden = repackage_hidden(hidden)
            output, hidden = model(data, hidden)
            loss = criterion(output, targets)
            loss.backward()

            # `clip_grad_norm` helps prevent the exploding gradient problem in RNNs / LSTMs.
            minigrad.nn.utils.clip_grad_norm_(model.parameters(), args.clip)
            for p in model.parameters():
                p.data.add_(p.grad, alpha=-lr)

            total_loss += loss.item()
            losses.append(loss.item())

            if batch % args.log_interval == 0 and batch > 0:
                cur_loss = total_loss / args.log_interval
                elapsed = time.time() - start_time
                print('| epoch {:3d} | {:5d}/{:5d} batches | lr {:02.2f} | ms/batch {:5.2f} | '
                      'loss {:5.2f} | ppl {:8.2f}'.format(
                          epoch, batch, len(train_data) // args.bptt, lr,
                          elapsed * 1000 / args.log_interval, cur_loss, math.exp(cur_loss)))
                total_loss = 0
                start_time = time.time()

    # Loop over epochs.
    lr = args.lr
    best_val_loss = None
    losses, val_losses = [], []
    for epoch in range(1, args.epochs + 1):
        epoch_start_time = time.time()
        train(epoch, lr, losses)
        val_loss = evaluate(val_data)
        val_losses.append(val_loss)
        print('-' * 89)
        print('| end of epoch {:3d} | time: {:5.2f}s | valid loss {:5.2f} | '
              'valid ppl {:8.2f}'.format(epoch, (time.time() - epoch_start_time),
                                         val_loss, math.exp(val_loss)))
        print('-' * 89)
        # Save the model if the validation loss is the best we've seen so far.
        if not best_val_loss or val_loss < best_val_loss:
            best_val_loss = val_loss
        else:
            # Anneal the learning rate if no improvement has been seen in the validation dataset.
            lr /= 4.0
    return {"losses": losses, "val_losses": val_losses}


if __name__ == '__main__':
    main()
