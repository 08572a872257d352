package pspsim

import (
	"encoding/json"
	"fmt"
	"time"

	"github.com/bcpdev/bcp/sim/pspsim/pspsimdb"
)

// The API Pix shapes as the simulator writes them (the spec's CobGerada /
// CobCompleta, Pix, Devolucao, WebhookCompleto). They are the simulator's
// own, not the client's (package pix), so the two are checked against the
// spec independently. The control API's ledger uses them too.

// Cob is a charge (CobGerada; CobCompleta with Pix).
type Cob struct {
	Calendario         Calendario `json:"calendario"`
	Txid               string     `json:"txid"`
	Revisao            int32      `json:"revisao"`
	Loc                Loc        `json:"loc"`
	Location           string     `json:"location"`
	Status             string     `json:"status"`
	Valor              CobValor   `json:"valor"`
	Chave              string     `json:"chave"`
	SolicitacaoPagador string     `json:"solicitacaoPagador,omitempty"`
	PixCopiaECola      string     `json:"pixCopiaECola"`
	Pix                []Pix      `json:"pix,omitempty"`
}

// Calendario is a charge's creation time and lifetime in seconds.
type Calendario struct {
	Criacao   time.Time `json:"criacao"`
	Expiracao int32     `json:"expiracao"`
}

// CobValor is a charge's amount.
type CobValor struct {
	Original            string `json:"original"`
	ModalidadeAlteracao int32  `json:"modalidadeAlteracao"`
}

// Loc is a charge's payload location (PayloadLocation; the spec's
// CobGerada also requires its txid).
type Loc struct {
	ID       int64     `json:"id"`
	Location string    `json:"location"`
	TipoCob  string    `json:"tipoCob"`
	Criacao  time.Time `json:"criacao"`
	Txid     string    `json:"txid"`
}

// Pix is a received Pix with its devoluções.
type Pix struct {
	EndToEndID  string      `json:"endToEndId"`
	Txid        string      `json:"txid,omitempty"`
	Valor       string      `json:"valor"`
	Chave       string      `json:"chave,omitempty"`
	Horario     time.Time   `json:"horario"`
	InfoPagador string      `json:"infoPagador,omitempty"`
	Devolucoes  []Devolucao `json:"devolucoes,omitempty"`
}

// Devolucao is a refund of a received Pix.
type Devolucao struct {
	ID        string           `json:"id"`
	RtrID     string           `json:"rtrId"`
	Valor     string           `json:"valor"`
	Natureza  string           `json:"natureza"`
	Descricao string           `json:"descricao,omitempty"`
	Horario   DevolucaoHorario `json:"horario"`
	Status    string           `json:"status"`
	Motivo    string           `json:"motivo,omitempty"`
}

// DevolucaoHorario is when a devolução was asked for and settled.
type DevolucaoHorario struct {
	Solicitacao time.Time  `json:"solicitacao"`
	Liquidacao  *time.Time `json:"liquidacao,omitempty"`
}

// Webhook is a webhook registration (WebhookCompleto).
type Webhook struct {
	WebhookURL string    `json:"webhookUrl"`
	Chave      string    `json:"chave"`
	CNPJ       string    `json:"cnpj,omitempty"`
	Criacao    time.Time `json:"criacao"`
}

// Notification is the body posted to {webhookUrl}/pix.
type Notification struct {
	Pix []Pix `json:"pix"`
}

func toCob(c pspsimdb.PspsimCharge, pix []Pix) Cob {
	return Cob{
		Calendario: Calendario{Criacao: c.Criacao.UTC(), Expiracao: c.Expiracao},
		Txid:       c.Txid, Revisao: c.Revisao, Status: c.Status,
		Loc:      Loc{ID: c.LocID, Location: c.Location, TipoCob: "cob", Criacao: c.Criacao.UTC(), Txid: c.Txid},
		Location: c.Location, Valor: CobValor{Original: c.Valor, ModalidadeAlteracao: c.ModalidadeAlteracao},
		Chave: c.Chave, SolicitacaoPagador: c.Solicitacao, PixCopiaECola: c.CopiaECola, Pix: pix,
	}
}

func toDevolucao(r pspsimdb.PspsimRefund) Devolucao {
	d := Devolucao{ID: r.ID, RtrID: r.RtrID, Valor: r.Valor, Natureza: r.Natureza, Descricao: r.Descricao, Status: r.Status, Motivo: r.Motivo,
		Horario: DevolucaoHorario{Solicitacao: r.Solicitacao.UTC()}}
	if r.Liquidacao != nil {
		t := r.Liquidacao.UTC()
		d.Horario.Liquidacao = &t
	}
	return d
}

// Rows as to_jsonb writes them (pspsim.pix_json, the ledger).

type pixRow struct {
	E2eID       string      `json:"e2e_id"`
	Txid        *string     `json:"txid"`
	Chave       string      `json:"chave"`
	Valor       string      `json:"valor"`
	Horario     time.Time   `json:"horario"`
	InfoPagador string      `json:"info_pagador"`
	ViaCob      bool        `json:"via_cob"`
	Refunds     []refundRow `json:"refunds"`
}

type refundRow struct {
	E2eID       string     `json:"e2e_id"`
	ID          string     `json:"id"`
	RtrID       string     `json:"rtr_id"`
	Valor       string     `json:"valor"`
	Natureza    string     `json:"natureza"`
	Descricao   string     `json:"descricao"`
	Status      string     `json:"status"`
	Motivo      string     `json:"motivo"`
	Solicitacao time.Time  `json:"solicitacao"`
	Liquidacao  *time.Time `json:"liquidacao"`
}

func (p pixRow) wire() Pix {
	out := Pix{EndToEndID: p.E2eID, Valor: p.Valor, Chave: p.Chave, Horario: p.Horario.UTC(), InfoPagador: p.InfoPagador}
	if p.Txid != nil {
		out.Txid = *p.Txid
	}
	for _, r := range p.Refunds {
		out.Devolucoes = append(out.Devolucoes, toDevolucao(pspsimdb.PspsimRefund{ID: r.ID, RtrID: r.RtrID, Valor: r.Valor, Natureza: r.Natureza,
			Descricao: r.Descricao, Status: r.Status, Motivo: r.Motivo, Solicitacao: r.Solicitacao, Liquidacao: r.Liquidacao}))
	}
	return out
}

// decodePix reads one pix_json value.
func decodePix(raw json.RawMessage) (Pix, error) {
	var p pixRow
	if err := json.Unmarshal(raw, &p); err != nil {
		return Pix{}, fmt.Errorf("pspsim: read Pix: %w", err)
	}
	return p.wire(), nil
}

// decodePixList reads a JSON array of pix_json values.
func decodePixList(raw json.RawMessage) ([]Pix, error) {
	var rows []pixRow
	if err := json.Unmarshal(raw, &rows); err != nil {
		return nil, fmt.Errorf("pspsim: read Pix: %w", err)
	}
	out := make([]Pix, 0, len(rows))
	for _, p := range rows {
		out = append(out, p.wire())
	}
	return out, nil
}
